// parse_peer_status and carry_peer_counters over FRR 8.4's JSON (the fields as bgpd printed
// them for a peer held down by max-prefix and for an inbound route-map that denied routes).
#include <gtest/gtest.h>

#include <algorithm>

#include "bgp/config.hpp"
#include "bgp/peer_status.hpp"

namespace {

using vxfed::bgp::PeerStatus;

vxfed::bgp::BgpConfig config() {
  auto c = vxfed::bgp::parse_config(YAML::Load(R"(
asn: 65001
router_id: 198.18.0.1
clusters: {cluster-a: [10.244.0.0/16], cluster-b: [10.245.0.0/16]}
peers:
  - {address: 198.18.0.2, remote_asn: 65002, cluster: cluster-b, network: fed}
  - {address: 198.18.0.10, remote_asn: 65001, network: fed}
)"));
  EXPECT_TRUE(c.ok()) << c.error();
  c->local_cluster = "cluster-a";
  return *c;
}

// B sent three prefixes, the accept list took one: the route-map looked at them three times
// (the first UPDATEs and two route refreshes), its permit rule took 3 of 9.
constexpr const char* kEstablished = R"(
{"198.18.0.2":{"remoteAs":65002,"bgpState":"Established","bgpTimerUpMsec":4000,"connectionsDropped":0,
 "lastResetDueTo":"No AFI/SAFI activated for peer",
 "addressFamilyInfo":{"ipv4Unicast":{"acceptedPrefixCounter":1,"sentPrefixCounter":1,"prefixAllowedMax":100}}},
 "198.18.0.10":{"remoteAs":65001,"bgpState":"Active","connectionsDropped":0}}
{"BGP":{"vxfed-in-198.18.0.2":{"invoked":9,"disabledOptimization":false,"processedChange":false,
 "rules":[{"sequenceNumber":10,"type":"permit","invoked":3,
 "matchClauses":["ip address prefix-list vxfed-in-198.18.0.2"],"setClauses":[],"action":"Exit routemap"}]},
 "vxfed-out":{"invoked":4,"rules":[{"sequenceNumber":10,"type":"permit","invoked":4}]}}}
)";

// The same peer after a fourth prefix over `maximum-prefix 2 restart 1`.
constexpr const char* kOverMaxPrefix = R"(
{"198.18.0.2":{"remoteAs":65002,"bgpState":"Idle","connectionsEstablished":1,"connectionsDropped":1,
 "lastErrorCodeSubcode":"0601","lastNotificationReason":"Cease/Maximum Number of Prefixes Reached",
 "lastResetDueTo":"BGP Notification send","lastResetCode":14,"prefixesConfigExceedMax":true,
 "reducePrefixNumFrom":true,"restartInTimerMsec":54000,
 "addressFamilyInfo":{"ipv4Unicast":{"acceptedPrefixCounter":0,"prefixAllowedMax":2}}}}
)";

TEST(PeerStatus, AReflectorIsIbgpOfThisNodesCluster) {
  const auto s = vxfed::bgp::parse_peer_status(config(), kEstablished);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].cluster, "cluster-b");
  EXPECT_FALSE(s[0].ibgp);
  EXPECT_EQ(s[1].cluster, "cluster-a");  // was "": the label vanished
  EXPECT_TRUE(s[1].ibgp);
  EXPECT_EQ(s[1].state, "Active");
}

TEST(PeerStatus, RoutesTheInboundPolicyDeniedAreCounted) {
  const auto cfg = config();
  const auto commands = vxfed::bgp::peer_status_commands(cfg);
  EXPECT_NE(std::find(commands.begin(), commands.end(), "show route-map json"), commands.end());
  const auto s = vxfed::bgp::parse_peer_status(cfg, kEstablished);
  EXPECT_EQ(s[0].prefixes_accepted, 1u);
  EXPECT_EQ(s[0].prefixes_denied, 6u);
  EXPECT_EQ(s[1].prefixes_denied, 0u);  // no route-map shown for it
  EXPECT_FALSE(s[0].max_prefix_overflow);
}

TEST(PeerStatus, MaxPrefixTeardownsAreCountedOncePerTeardown) {
  const auto cfg = config();
  std::vector<PeerStatus> last = vxfed::bgp::parse_peer_status(cfg, kEstablished);
  vxfed::bgp::carry_peer_counters({}, last);
  EXPECT_EQ(last[0].max_prefix_teardowns, 0u);
  auto poll = [&](const char* output) {
    auto now = vxfed::bgp::parse_peer_status(cfg, output);
    vxfed::bgp::carry_peer_counters(last, now);
    last = now;
    return now[0];
  };
  auto down = poll(kOverMaxPrefix);
  EXPECT_TRUE(down.max_prefix_overflow);
  EXPECT_EQ(down.max_prefix_teardowns, 1u);
  EXPECT_EQ(poll(kOverMaxPrefix).max_prefix_teardowns, 1u);  // still the same teardown
  auto unknown = poll("");                                    // bgpd did not answer
  EXPECT_TRUE(unknown.max_prefix_overflow);
  EXPECT_EQ(poll(kOverMaxPrefix).max_prefix_teardowns, 1u);
  EXPECT_EQ(poll(kEstablished).max_prefix_teardowns, 1u);     // restarted after max_prefix_restart
  EXPECT_EQ(poll(kOverMaxPrefix).max_prefix_teardowns, 2u);   // and over again
}

}  // namespace
