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
feed: fpm
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

// FRR 8.4's "Active (NSF passive)": a graceful-restart helper whose reflector went down keeps
// its routes stale and waits for the reflector to dial, which a reflector on a listen range
// never does (issue 37, item 4). Such a reflector peer is dialed (`clear bgp X`, in the
// enable node); an eBGP peer in the same state, or a reflector merely Active, is not.
constexpr const char* kReflectorNsfPassive = R"(
{"198.18.0.2":{"remoteAs":65002,"bgpState":"Active","bgpStateIs":"passiveNSF","connectionsDropped":1},
 "198.18.0.10":{"remoteAs":65001,"bgpState":"Active","bgpStateIs":"passiveNSF","connectionsDropped":1,
 "lastResetDueTo":"BFD down received"}}
)";

TEST(PeerStatus, AReflectorWaitedForPassivelyIsDialed) {
  const auto s = vxfed::bgp::parse_peer_status(config(), kReflectorNsfPassive);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[0].nsf_passive);
  EXPECT_TRUE(s[1].nsf_passive);
  EXPECT_EQ(vxfed::bgp::redial_commands(config(), s),
            (std::vector<std::string>{"enable", "clear bgp 198.18.0.10"}));
  const auto active = vxfed::bgp::parse_peer_status(config(), kEstablished);  // the reflector Active, not NSF
  EXPECT_FALSE(active[1].nsf_passive);
  EXPECT_TRUE(vxfed::bgp::redial_commands(config(), active).empty());
}

// The soft clear after a bare bgpd got its config: `clear` lives in the enable node, and a vty
// socket starts in the view node, where bgpd answers "Unknown command" and clears nothing.
TEST(PeerStatus, TheSoftClearEntersTheEnableNodeFirst) {
  const auto c = vxfed::bgp::soft_clear_commands(config());
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], "enable");
  EXPECT_EQ(c[1], "clear bgp ipv4 unicast * soft");
}

// With the BMP feed bgpd's instance is the view `vxfed`: every show and clear must name it,
// or bgpd answers for the default instance, which does not exist ("{}", nothing cleared).
TEST(PeerStatus, WithTheBmpFeedEveryCommandNamesTheView) {
  auto cfg = config();
  cfg.feed = vxfed::bgp::Feed::kBmp;
  const auto commands = vxfed::bgp::peer_status_commands(cfg);
  EXPECT_EQ(commands[0], "show bgp view vxfed neighbors json");
  for (std::size_t i = 3; i < commands.size(); ++i)
    EXPECT_EQ(commands[i].rfind("show bgp view vxfed ipv4 unicast neighbors ", 0), 0u) << commands[i];
  EXPECT_EQ(vxfed::bgp::soft_clear_commands(cfg)[1], "clear bgp view vxfed ipv4 unicast * soft");
  auto s = vxfed::bgp::parse_peer_status(cfg, kReflectorNsfPassive);
  EXPECT_EQ(vxfed::bgp::redial_commands(cfg, s),
            (std::vector<std::string>{"enable", "clear bgp view vxfed 198.18.0.10"}));
}
