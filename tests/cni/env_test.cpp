// Unit tests for CNI_* environment parsing (cni/env.hpp): tables of cases.
#include <gtest/gtest.h>

#include "cni/env.hpp"

namespace {

using namespace vxfed::cni;

EnvLookup table(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::map<std::string, std::string> add_env() {
  return {{"CNI_COMMAND", "ADD"}, {"CNI_CONTAINERID", "abc123"}, {"CNI_NETNS", "/var/run/netns/x"},
          {"CNI_IFNAME", "net1"}, {"CNI_PATH", "/opt/cni/bin:/usr/lib/cni"}};
}

TEST(Env, ParsesAValidAdd) {
  auto env = parse_env(table(add_env()));
  ASSERT_TRUE(env.ok()) << env.error().msg;
  EXPECT_EQ(env->command, Command::kAdd);
  EXPECT_EQ(env->container_id, "abc123");
  EXPECT_EQ(env->ifname, "net1");
  EXPECT_EQ(env->path, (std::vector<std::string>{"/opt/cni/bin", "/usr/lib/cni"}));
}

struct BadCase {
  const char* description;
  std::string key;
  std::optional<std::string> value;  // nullopt: unset
  int code;
  const char* message_part;
};

TEST(Env, RefusesBadInputWithCode4) {
  const BadCase cases[] = {
      {"no command", "CNI_COMMAND", std::nullopt, 4, "CNI_COMMAND is not set"},
      {"unknown command", "CNI_COMMAND", "FROB", 4, "not one of"},
      {"no container id", "CNI_CONTAINERID", std::nullopt, 4, "CNI_CONTAINERID is not set"},
      {"container id with slash", "CNI_CONTAINERID", "abc/../x", 4, "contains '/'"},
      {"container id with space", "CNI_CONTAINERID", "abc def", 4, "contains ' '"},
      {"container id starting with dash", "CNI_CONTAINERID", "-abc", 4, "must start"},
      {"ifname too long", "CNI_IFNAME", "abcdefghijklmnop", 4, "16 characters long"},
      {"ifname with slash", "CNI_IFNAME", "net/1", 4, "contains '/'"},
      {"ifname with colon", "CNI_IFNAME", "net:1", 4, "contains ':'"},
      {"ifname dot", "CNI_IFNAME", ".", 4, "not allowed"},
      {"no ifname", "CNI_IFNAME", std::nullopt, 4, "CNI_IFNAME is not set"},
      {"no netns on ADD", "CNI_NETNS", std::nullopt, 4, "CNI_NETNS is not set"},
      {"relative netns", "CNI_NETNS", "netns/x", 4, "absolute"},
      {"no path on ADD", "CNI_PATH", std::nullopt, 4, "CNI_PATH is not set"},
      {"malformed args", "CNI_ARGS", "K8S_POD_NAME", 4, "not KEY=VALUE"},
      {"unknown arg", "CNI_ARGS", "FOO=bar", 4, "unknown key 'FOO'"},
  };
  for (const auto& c : cases) {
    auto vars = add_env();
    if (c.value) vars[c.key] = *c.value; else vars.erase(c.key);
    auto env = parse_env(table(vars));
    ASSERT_FALSE(env.ok()) << c.description;
    EXPECT_EQ(env.error().code, c.code) << c.description;
    EXPECT_NE(env.error().msg.find(c.message_part), std::string::npos) << c.description << ": " << env.error().msg;
  }
}

TEST(Env, IfnameOfExactly15IsAccepted) {
  auto vars = add_env();
  vars["CNI_IFNAME"] = "abcdefghijklmno";
  EXPECT_TRUE(parse_env(table(vars)).ok());
}

TEST(Env, DelNeedsNoNetnsNorPath) {
  auto vars = add_env();
  vars["CNI_COMMAND"] = "DEL";
  vars.erase("CNI_NETNS");
  vars.erase("CNI_PATH");
  auto env = parse_env(table(vars));
  ASSERT_TRUE(env.ok()) << env.error().msg;
  EXPECT_TRUE(env->netns.empty());
}

TEST(Env, VersionNeedsNothingElse) {
  auto env = parse_env(table({{"CNI_COMMAND", "VERSION"}}));
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->command, Command::kVersion);
}

TEST(Env, GcAndStatusNeedNoContainer) {
  for (const char* cmd : {"GC", "STATUS"}) {
    auto env = parse_env(table({{"CNI_COMMAND", cmd}, {"CNI_PATH", "/usr/lib/cni"}}));
    ASSERT_TRUE(env.ok()) << cmd << ": " << env.error().msg;
  }
}

TEST(Env, MultusArgsWithIgnoreUnknown) {
  auto vars = add_env();
  vars["CNI_ARGS"] =
      "IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=trainer-0;"
      "K8S_POD_INFRA_CONTAINER_ID=abc123;K8S_POD_UID=1f2e-33;SOMETHING_ELSE=1";
  auto env = parse_env(table(vars));
  ASSERT_TRUE(env.ok()) << env.error().msg;
  EXPECT_EQ(env->arg_map.at("K8S_POD_NAME"), "trainer-0");
  EXPECT_EQ(env->arg_map.at("K8S_POD_UID"), "1f2e-33");
}

TEST(Env, IgnoreUnknownAcceptsOne) {
  EXPECT_TRUE(parse_cni_args("IgnoreUnknown=1;X=y").ok());
  EXPECT_FALSE(parse_cni_args("IgnoreUnknown=false;X=y").ok());
  EXPECT_TRUE(parse_cni_args("").ok());
}

}  // namespace
