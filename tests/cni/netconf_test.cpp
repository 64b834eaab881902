// Unit tests for the network configuration parser (cni/netconf.hpp).
#include <gtest/gtest.h>

#include "cni/netconf.hpp"

namespace {

using namespace vxfed::cni;
using nlohmann::json;

json base() {
  return json::parse(R"({"cniVersion":"1.0.0","name":"fed-a","type":"vxfed",
    "ipam":{"type":"host-local","ranges":[[{"subnet":"10.244.0.0/16"}]]}})");
}

TEST(NetConf, ParsesDefaults) {
  auto c = parse_netconf(base().dump());
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(c->network, "fed-a");
  EXPECT_EQ(c->ipam_type, "host-local");
  EXPECT_EQ(c->mtu, 0u);
  EXPECT_EQ(c->socket, kDefaultSocket);
  EXPECT_EQ(c->state_dir, kDefaultStateDir);
  EXPECT_FALSE(c->bandwidth.has_value());
  EXPECT_FALSE(c->prev_result.has_value());
  EXPECT_TRUE(c->service_cidrs.empty());
}

TEST(NetConf, ReadsEveryField) {
  auto j = base();
  j["cniVersion"] = "1.1.0";
  j["network"] = "cross";
  j["mtu"] = 8900;
  j["socket"] = "/tmp/s.sock";
  j["stateDir"] = "/tmp/state";
  j["logFile"] = "/tmp/log";
  j["logLevel"] = "debug";
  j["timeoutMs"] = 1000;
  j["serviceCidrs"] = {"10.96.0.0/24", "10.97.0.0/16"};
  j["runtimeConfig"] = {{"mac", "0A:58:0A:F4:01:05"},
                        {"bandwidth", {{"ingressRate", 1000000}, {"ingressBurst", 100000}}}};
  j["cni.dev/valid-attachments"] = json::array({{{"containerID", "a"}, {"ifname", "net1"}}});
  j["cni.dev/attachments"] = json::array({{{"containerID", "b"}, {"ifname", "eth0"}}});
  auto c = parse_netconf(j.dump());
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(c->network, "cross");
  EXPECT_EQ(c->mtu, 8900u);
  EXPECT_EQ(c->socket, "/tmp/s.sock");
  EXPECT_EQ(c->timeout_ms, 1000u);
  ASSERT_EQ(c->service_cidrs.size(), 2u);
  EXPECT_EQ(c->service_cidrs[0].str(), "10.96.0.0/24");
  EXPECT_EQ(c->service_cidrs[1].str(), "10.97.0.0/16");
  EXPECT_EQ(*c->runtime_mac, "0a:58:0a:f4:01:05");
  ASSERT_TRUE(c->bandwidth);
  EXPECT_EQ(c->bandwidth->ingress_rate, 1000000u);
  EXPECT_TRUE(c->has_valid_attachments);
  EXPECT_EQ(c->valid_attachments.size(), 2u);
}

struct Bad {
  const char* description;
  std::string text;
  int code;
  const char* message_part;
};

std::string with(const char* key, json value) {
  auto j = base();
  if (value.is_null()) j.erase(key); else j[key] = value;
  return j.dump();
}

std::string with_rc(json rc) {
  auto j = base();
  j["runtimeConfig"] = rc;
  return j.dump();
}

TEST(NetConf, RefusesBadConfigs) {
  const Bad cases[] = {
      {"not json", "{\"cniVersion\":", 6, "not valid JSON"},
      {"array", "[1,2]", 6, "JSON object"},
      {"no version", with("cniVersion", nullptr), 7, "cniVersion"},
      {"unknown version", with("cniVersion", "2.0.0"), 1, "not supported"},
      {"garbage version", with("cniVersion", "one"), 1, "not supported"},
      {"no name", with("name", nullptr), 7, "\"name\""},
      {"name with slash", with("name", "a/b"), 7, "network name"},
      {"no type", with("type", nullptr), 7, "\"type\""},
      {"type is a path", with("type", "/usr/bin/vxfed"), 7, "names a path"},
      {"type climbs", with("type", "../vxfed"), 7, "names a path"},
      {"ipam type is a path", with("ipam", {{"type", "/tmp/evil"}}), 7, "names a path"},
      {"ipam type relative path", with("ipam", {{"type", "x/host-local"}}), 7, "names a path"},
      {"ipam without type", with("ipam", json::object()), 7, "no \"type\""},
      {"ipam not an object", with("ipam", "host-local"), 7, "must be an object"},
      {"mtu too small", with("mtu", 10), 7, "mtu"},
      {"mtu negative", with("mtu", -1), 7, "mtu"},
      {"mtu string", with("mtu", "9000"), 7, "mtu"},
      {"network upper case", with("network", "Fed"), 7, "[a-z0-9-]"},
      {"relative socket", with("socket", "vxfedd.sock"), 7, "absolute"},
      {"bad mac", with_rc({{"mac", "zz:zz"}}), 7, "unicast MAC"},
      {"multicast mac", with_rc({{"mac", "01:00:5e:00:00:01"}}), 7, "unicast MAC"},
      {"dash mac", with_rc({{"mac", "0a-58-0a-f4-01-05"}}), 7, "unicast MAC"},  // ':' only (common/net)
      {"negative rate", with_rc({{"bandwidth", {{"ingressRate", -5}, {"ingressBurst", 10}}}}), 7, "negative"},
      {"string rate", with_rc({{"bandwidth", {{"egressRate", "1M"}, {"egressBurst", 10}}}}), 7, "positive integer"},
      {"rate without burst", with_rc({{"bandwidth", {{"egressRate", 1000000}}}}), 7, "burst must also be set"},
      {"burst without rate", with_rc({{"bandwidth", {{"ingressBurst", 1000}}}}), 7, "rate must also be set"},
      {"huge burst", with_rc({{"bandwidth", {{"ingressRate", 1000}, {"ingressBurst", 40000000000ull}}}}), 7, "4GB"},
      {"fractional rate", with_rc({{"bandwidth", {{"ingressRate", 1.5}, {"ingressBurst", 10}}}}), 7, "positive integer"},
      {"prevResult not object", with("prevResult", "x"), 6, "prevResult"},
      {"valid-attachments malformed", with("cni.dev/valid-attachments", json::array({1})), 7, "containerID"},
      {"serviceCidrs not a list", with("serviceCidrs", "10.96.0.0/24"), 7, "\"serviceCidrs\" must be an array"},
      {"serviceCidrs entry not a string", with("serviceCidrs", {"10.96.0.0/24", 5}), 7, "serviceCidrs[1] must be a string"},
      {"serviceCidrs host bits", with("serviceCidrs", {"10.96.0.1/24"}), 7, "serviceCidrs[0]: "},
      {"serviceCidrs no length", with("serviceCidrs", {"10.96.0.0"}), 7, "serviceCidrs[0]: "},
      {"serviceCidrs garbage", with("serviceCidrs", {"10.96.0.0/24", "ten/8"}), 7, "serviceCidrs[1]: "},
      {"serviceCidrs everything", with("serviceCidrs", {"0.0.0.0/0"}), 7, "serviceCidrs[0]: \"0.0.0.0/0\" is every address"},
      {"serviceCidrs twice", with("serviceCidrs", {"10.96.0.0/24", "10.96.0.0/24"}), 7, "serviceCidrs[1]: \"10.96.0.0/24\" is listed twice"},
      {"serviceCIDRs", with("serviceCIDRs", {"10.96.0.0/24"}), 7, "\"serviceCIDRs\" is not a vxfed field: the service range is \"serviceCidrs\""},
      {"service_cidrs", with("service_cidrs", {"10.96.0.0/24"}), 7, "\"service_cidrs\" is not a vxfed field"},
      {"serviceCIDR", with("serviceCIDR", "10.96.0.0/24"), 7, "\"serviceCIDR\" is not a vxfed field"},
      {"serviceRange", with("serviceRange", "10.96.0.0/24"), 7, "\"serviceRange\" is not a vxfed field"},
      {"serviceCidrs IPv6", with("serviceCidrs", {"fd00:96::/112"}), 2, "serviceCidrs[0]: \"fd00:96::/112\" is IPv6"},
  };
  for (const auto& c : cases) {
    auto r = parse_netconf(c.text);
    ASSERT_FALSE(r.ok()) << c.description;
    EXPECT_EQ(r.error().code, c.code) << c.description << ": " << r.error().msg;
    EXPECT_NE(r.error().msg.find(c.message_part), std::string::npos) << c.description << ": " << r.error().msg;
  }
}

// The strict prefix spelling's hint reaches the user with the field (common/net/ipv4.hpp).
TEST(NetConf, AServiceRangeWithHostBitsSaysWhatWasMeant) {
  auto r = parse_netconf(with("serviceCidrs", {"10.96.0.1/24"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().msg.find("10.96.0.0/24"), std::string::npos) << r.error().msg;
}

TEST(NetConf, AnEmptyOrNullServiceRangeRoutesNothing) {
  for (const json& v : {json::array(), json(nullptr)}) {
    auto j = base();
    j["serviceCidrs"] = v;
    auto c = parse_netconf(j.dump());
    ASSERT_TRUE(c.ok()) << c.error().msg;
    EXPECT_TRUE(c->service_cidrs.empty());
  }
}

TEST(NetConf, AcceptsOldAndNewVersions) {
  for (const char* v : {"0.3.1", "0.4.0", "1.0.0", "1.1.0"}) {
    auto j = base();
    j["cniVersion"] = v;
    EXPECT_TRUE(parse_netconf(j.dump()).ok()) << v;
  }
}

TEST(NetConf, ParsesPrevResultOfBothLayouts) {
  auto j = base();
  j["cniVersion"] = "0.4.0";
  j["prevResult"] = json::parse(R"({"cniVersion":"0.4.0","interfaces":[{"name":"net1","sandbox":"/x"}],
     "ips":[{"version":"4","address":"10.244.0.5/16","gateway":"10.244.0.1","interface":0}]})");
  auto c = parse_netconf(j.dump());
  ASSERT_TRUE(c.ok()) << c.error().msg;
  ASSERT_EQ(c->prev_result->ips.size(), 1u);
  EXPECT_EQ(c->prev_result->ips[0].address, "10.244.0.5/16");
  EXPECT_EQ(*c->prev_result->ips[0].interface, 0);
}

TEST(NetConf, IpamStdinLowersOnlyTheVersion) {
  auto j = base();
  j["cniVersion"] = "1.1.0";
  auto c = parse_netconf(j.dump());
  ASSERT_TRUE(c.ok());
  auto lowered = json::parse(ipam_stdin(*c, "1.0.0"));
  EXPECT_EQ(lowered["cniVersion"], "1.0.0");
  EXPECT_EQ(lowered["ipam"], j["ipam"]);
  EXPECT_EQ(json::parse(ipam_stdin(*c, "1.1.0")), j);
}

TEST(NetConf, RateAndBurstRules) {
  EXPECT_FALSE(validate_rate_and_burst(0, 0));
  EXPECT_FALSE(validate_rate_and_burst(1000, 1000));
  EXPECT_TRUE(validate_rate_and_burst(1000, 0));
  EXPECT_TRUE(validate_rate_and_burst(0, 1000));
}

TEST(NetConf, PeekVersion) {
  EXPECT_EQ(peek_version(R"({"cniVersion":"0.4.0"})"), "0.4.0");
  EXPECT_FALSE(peek_version("").has_value());
  EXPECT_FALSE(peek_version("nope").has_value());
}

}  // namespace
