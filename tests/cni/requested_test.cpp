// Unit tests for what the runtime requested (cni/requested.hpp): a MAC and addresses from
// CNI_ARGS, runtimeConfig and args.cni, their precedence and their error codes.
#include <gtest/gtest.h>

#include "cni/requested.hpp"

namespace {

using namespace vxfed::cni;
using nlohmann::json;

NetConf conf(json extra = json::object()) {
  json j = json::parse(R"({"cniVersion":"1.0.0","name":"fed-a","type":"vxfed","ipam":{"type":"host-local"}})");
  j.update(extra);
  auto c = parse_netconf(j.dump());
  EXPECT_TRUE(c.ok()) << c.error().msg;
  return *c;
}

CniEnv env(const std::string& args) {
  CniEnv e;
  auto parsed = parse_cni_args(args);
  EXPECT_TRUE(parsed.ok()) << parsed.error().msg;
  e.arg_map = *parsed;
  return e;
}

TEST(Requested, NothingAsked) {
  auto r = requested(conf(), env(""));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->mac.has_value());
  EXPECT_TRUE(r->ips.empty());
}

TEST(Requested, PodmanSendsMacAndIpInCniArgs) {
  // podman 4.3's CNI backend, --mac-address and --ip: no runtimeConfig at all.
  auto r = requested(conf(), env("IgnoreUnknown=1;K8S_POD_NAME=c1;MAC=0A:58:0a:f4:01:99;IP=10.244.1.99"));
  ASSERT_TRUE(r.ok()) << r.error().msg;
  ASSERT_TRUE(r->mac.has_value());
  EXPECT_EQ(vxfed::net::format_mac(*r->mac), "0a:58:0a:f4:01:99");
  EXPECT_EQ(r->mac_source, "CNI_ARGS MAC");
  ASSERT_EQ(r->ips.size(), 1u);
  EXPECT_EQ(r->ips[0].str(), "10.244.1.99");
}

TEST(Requested, MacAndIpAreKnownKeysWithoutIgnoreUnknown) {
  EXPECT_TRUE(parse_cni_args("MAC=0a:58:0a:f4:01:99;IP=10.244.1.9").ok());
}

TEST(Requested, RuntimeConfigBeatsCniArgsBeatsArgs) {
  const json args = {{"args", {{"cni", {{"mac", "0a:00:00:00:00:03"}}}}}};
  auto only_args = requested(conf(args), env(""));
  ASSERT_TRUE(only_args.ok());
  EXPECT_EQ(only_args->mac_source, "args.cni.mac");
  auto with_env = requested(conf(args), env("MAC=0a:00:00:00:00:02"));
  ASSERT_TRUE(with_env.ok());
  EXPECT_EQ(vxfed::net::format_mac(*with_env->mac), "0a:00:00:00:00:02");
  json all = args;
  all["runtimeConfig"] = {{"mac", "0a:00:00:00:00:01"}};
  auto with_rc = requested(conf(all), env("MAC=0a:00:00:00:00:02"));
  ASSERT_TRUE(with_rc.ok());
  EXPECT_EQ(vxfed::net::format_mac(*with_rc->mac), "0a:00:00:00:00:01");
  EXPECT_EQ(with_rc->mac_source, "runtimeConfig.mac");
}

TEST(Requested, AddressesFromEverySource) {
  json j = {{"runtimeConfig", {{"ips", {"10.244.7.7/16", "fd00::7/64"}}}},
            {"args", {{"cni", {{"ips", {"10.244.7.8"}}}}}}};
  auto r = requested(conf(j), env("IP=10.244.7.9,10.244.7.10"));
  ASSERT_TRUE(r.ok()) << r.error().msg;
  std::vector<std::string> got;
  for (const auto& ip : r->ips) got.push_back(ip.str());
  EXPECT_EQ(got, (std::vector<std::string>{"10.244.7.9", "10.244.7.10", "10.244.7.7", "10.244.7.8"}));
  EXPECT_EQ(r->ips_source, "CNI_ARGS IP, runtimeConfig.ips, args.cni.ips");
}

TEST(Requested, BadValuesAndTheirCodes) {
  struct Case {
    json extra;
    std::string args;
    int code;
  };
  const Case cases[] = {
      {json::object(), "MAC=01:00:5e:00:00:01", kInvalidEnv},   // multicast
      {json::object(), "MAC=0a-58-0a-f4-01-99", kInvalidEnv},   // '-' spelling
      {json::object(), "IP=10.244.1", kInvalidEnv},
      {{{"args", {{"cni", {{"mac", "zz"}}}}}}, "", kInvalidConfig},
      {{{"args", {{"cni", {{"ips", "10.0.0.1"}}}}}}, "", kInvalidConfig},   // not a list
      {{{"args", {{"cni", 5}}}}, "", kInvalidConfig},
      {{{"runtimeConfig", {{"ips", {"10.0.0.300/16"}}}}}, "", kInvalidConfig},
  };
  for (const auto& c : cases) {
    auto r = requested(conf(c.extra), env(c.args));
    ASSERT_FALSE(r.ok()) << c.extra.dump() << " " << c.args;
    EXPECT_EQ(r.error().code, c.code) << c.extra.dump() << " " << c.args << ": " << r.error().msg;
  }
}

}  // namespace
