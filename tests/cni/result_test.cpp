// Unit tests for the result writer/parser, versions and state records (addresses:
// tests/common/net_test.cpp).
#include <gtest/gtest.h>

#include <set>

#include "cni/cni_result.hpp"
#include "cni/records.hpp"
#include "cni/version.hpp"

namespace {

using namespace vxfed::cni;
using nlohmann::json;

CniResult sample() {
  CniResult r;
  r.interfaces = {{"vxf0123456789ab", "aa:bb:cc:dd:ee:01", "", 9000}, {"net1", "0a:58:0a:f4:00:05", "/var/run/netns/p", 8950}};
  r.ips = {{"10.244.0.5/16", "10.244.0.1", 1}};
  r.routes = {{"10.244.0.0/16", "10.244.0.1"}, {"10.245.0.0/16", "10.244.0.1"}};
  r.dns = json::object();
  return r;
}

TEST(Result, Writes110WithInterfaceMtu) {
  auto j = write_result(sample(), "1.1.0");
  EXPECT_EQ(j["cniVersion"], "1.1.0");
  EXPECT_EQ(j["interfaces"][1]["mtu"], 8950);
  EXPECT_EQ(j["interfaces"][1]["sandbox"], "/var/run/netns/p");
  EXPECT_FALSE(j["interfaces"][0].contains("sandbox"));
  EXPECT_FALSE(j["ips"][0].contains("version"));
  EXPECT_EQ(j["ips"][0]["interface"], 1);
  EXPECT_EQ(j["routes"].size(), 2u);
}

TEST(Result, Writes100WithoutMtuOrIpVersion) {
  auto j = write_result(sample(), "1.0.0");
  EXPECT_FALSE(j["interfaces"][1].contains("mtu"));
  EXPECT_FALSE(j["ips"][0].contains("version"));
}

TEST(Result, Writes040WithIpVersion) {
  auto j = write_result(sample(), "0.4.0");
  EXPECT_EQ(j["ips"][0]["version"], "4");
  EXPECT_FALSE(j["interfaces"][1].contains("mtu"));
}

TEST(Result, RoundTrips) {
  for (const char* v : {"0.4.0", "1.0.0", "1.1.0"}) {
    auto parsed = parse_result(write_result(sample(), v));
    ASSERT_TRUE(parsed.ok()) << v;
    EXPECT_EQ(parsed->interfaces.size(), 2u);
    EXPECT_EQ(parsed->ips[0].address, "10.244.0.5/16");
    EXPECT_EQ(parsed->routes[1].dst, "10.245.0.0/16");
  }
}

TEST(Result, ParsesHostLocalOutput) {
  auto r = parse_result(json::parse(R"({"cniVersion":"1.0.0","ips":[{"address":"10.244.1.2/16","gateway":"10.244.0.1"}],
      "routes":[{"dst":"0.0.0.0/0"}],"dns":{"nameservers":["10.96.0.10"]}})"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->ips[0].interface.has_value());
  EXPECT_EQ(r->dns["nameservers"][0], "10.96.0.10");
}

TEST(Result, RefusesMalformed) {
  EXPECT_EQ(parse_result(json::parse(R"({"ips":"x"})")).error().code, 6);
  EXPECT_EQ(parse_result(json::parse(R"({"ips":[{"gateway":"1.2.3.4"}]})")).error().code, 6);
  EXPECT_EQ(parse_result(json::parse(R"({"interfaces":[{"name":5}]})")).error().code, 6);
  EXPECT_EQ(parse_result(json::parse("[]")).error().code, 6);
}

TEST(Result, ErrorAndVersionJson) {
  auto e = write_error(cni_error(7, "bad", "why"), "1.0.0");
  EXPECT_EQ(e["code"], 7);
  EXPECT_EQ(e["msg"], "bad");
  EXPECT_EQ(e["details"], "why");
  EXPECT_FALSE(write_error(cni_error(4, "x"), "1.0.0").contains("details"));
  auto v = write_version_info("1.1.0");
  EXPECT_EQ(v["supportedVersions"].size(), 5u);
}

TEST(Version, ParsesAndCompares) {
  EXPECT_TRUE(parse_version("1.0.0"));
  EXPECT_FALSE(parse_version("1.0"));
  EXPECT_FALSE(parse_version("1.0.0.0"));
  EXPECT_FALSE(parse_version("a.b.c"));
  EXPECT_LT(*parse_version("0.4.0"), *parse_version("1.0.0"));
  EXPECT_TRUE(supports_check(*parse_version("0.4.0")));
  EXPECT_FALSE(supports_check(*parse_version("0.3.1")));
  EXPECT_TRUE(supports_gc_and_status(*parse_version("1.1.0")));
}

TEST(Version, HighestCommonForOlderIpam) {
  const std::vector<std::string> host_local = {"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"};
  EXPECT_EQ(highest_common(host_local, "1.1.0"), "1.0.0");
  EXPECT_EQ(highest_common(host_local, "0.4.0"), "0.4.0");
  EXPECT_FALSE(highest_common({"0.1.0"}, "1.1.0"));
}

TEST(Records, HostIfaceNameIsStableShortAndDistinct) {
  const auto a = host_iface_name("abc", "net1");
  EXPECT_EQ(a, host_iface_name("abc", "net1"));
  EXPECT_EQ(a.size(), 15u);
  EXPECT_EQ(a.rfind("vxf", 0), 0u);
  EXPECT_NE(a, host_iface_name("abc", "net2"));
  EXPECT_NE(host_iface_name("ab", "cnet1"), host_iface_name("abc", "net1"));
  std::set<std::string> names;
  for (int i = 0; i < 10000; ++i) names.insert(host_iface_name("container-" + std::to_string(i), "eth0"));
  EXPECT_EQ(names.size(), 10000u);
}

TEST(Records, AttachmentRecordRoundTrips) {
  AttachmentRecord r{"c1", "net1", "fed-a", "fed-a", "/var/run/netns/x", "vxf0123", "10.244.0.5/16", "aa:bb:cc:dd:ee:ff", "host-local", 42};
  auto back = parse_record(write_record(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->host_iface, "vxf0123");
  EXPECT_EQ(back->created_unix_ms, 42u);
  EXPECT_FALSE(parse_record("{}").ok());
  EXPECT_FALSE(parse_record("garbage").ok());
}

TEST(Records, QueueDedupesAndDrops) {
  std::vector<PendingDetach> q;
  enqueue(q, {"c1", "net1", "n", 1, 0});
  enqueue(q, {"c1", "net1", "n", 2, 0});
  enqueue(q, {"c2", "net1", "n", 3, 0});
  EXPECT_EQ(q.size(), 2u);
  auto back = parse_queue(write_queue(q));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->size(), 2u);
  EXPECT_TRUE(drop_queued(q, "c1", "net1"));
  EXPECT_FALSE(drop_queued(q, "c1", "net1"));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_TRUE(parse_queue("").ok());
  EXPECT_TRUE(parse_queue("  \n").value().empty());
  EXPECT_FALSE(parse_queue("{").ok());
}

}  // namespace
