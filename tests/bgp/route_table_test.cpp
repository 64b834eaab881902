// RouteTable: next hop -> VTEP, prefix -> peer -> VNI, withdrawals, coalesced deltas and the
// mark-and-sweep resync.
#include <gtest/gtest.h>

#include <map>

#include "bgp/route_table.hpp"
#include "bgp/fpm_encoder.hpp"
#include "tests/bgp/test_support.hpp"

namespace {

using namespace vxfed::bgp;
using vxfed::net::Ipv4Addr, vxfed::net::Ipv4Prefix;
using vxfed::RouteUpdate;

std::uint32_t ip(const char* s) { return Ipv4Addr::parse(s)->value; }
Ipv4Prefix pfx(const char* s) { return *Ipv4Prefix::parse(s); }

std::vector<PeerConfig> peers() {
  auto c = parse_config(YAML::Load(R"(
asn: 65001
router_id: 198.18.0.1
clusters: {b: [10.245.0.0/16], c: [10.246.0.0/16]}
peers:
  - {address: 198.18.0.2, remote_asn: 65002, cluster: b, network: fed, accept: ["10.245.0.0/16 le 24"]}
  - {address: 198.18.0.3, remote_asn: 65003, cluster: c, vni: 2000}
)"));
  EXPECT_TRUE(c.ok()) << c.error();
  return c->peers;
}

struct Fixture : ::testing::Test {
  std::map<std::string, std::uint32_t> vnis{{"fed", 1500}};
  RouteTable table{peers(), [this](const std::string& n) -> std::optional<std::uint32_t> {
                     auto it = vnis.find(n);
                     if (it == vnis.end()) return std::nullopt;
                     return it->second;
                   }};
  void apply(const char* prefix, std::initializer_list<std::uint32_t> gws, bool del = false) {
    table.apply(fpm::make_bgp_route(pfx(prefix), gws, del));
  }
  static std::string str(const RouteUpdate& u) { return vxfed::bgp::testing::update_text(u); }
};

TEST_F(Fixture, LearnsVtepsAndVniFromThePeerWhoseAcceptListMatches) {
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  apply("10.246.0.0/16", {ip("198.18.0.13"), ip("198.18.0.14"), ip("198.18.0.13")});
  EXPECT_EQ(str(table.take_pending()),
            "delta +10.245.0.0/16@1500[198.18.0.12]198.18.0.2 +10.246.0.0/16@2000[198.18.0.13,198.18.0.14]198.18.0.3");
  EXPECT_EQ(table.size(), 2u);
  auto snap = table.snapshot();
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_EQ(snap[0].peer.str(), "198.18.0.2");
  EXPECT_EQ(snap[1].peer.str(), "198.18.0.3");
}

TEST_F(Fixture, WithdrawalRemoves) {
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  table.take_pending();
  apply("10.245.0.0/16", {}, true);
  EXPECT_EQ(str(table.take_pending()), "delta -10.245.0.0/16@1500");
  EXPECT_EQ(table.size(), 0u);
}

TEST_F(Fixture, DeleteThenAddInOneBatchIsOneUpsert) {
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  table.take_pending();
  apply("10.245.0.0/16", {ip("198.18.0.12")}, true);
  apply("10.245.0.0/16", {ip("198.18.0.13")});
  EXPECT_EQ(str(table.take_pending()), "delta +10.245.0.0/16@1500[198.18.0.13]198.18.0.2");
}

TEST_F(Fixture, AddThenDeleteOfANewRouteEmitsNothing) {
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  apply("10.245.0.0/16", {}, true);
  EXPECT_TRUE(table.take_pending().empty());
}

TEST_F(Fixture, IdenticalResendEmitsNothing) {
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  table.take_pending();
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  EXPECT_TRUE(table.take_pending().empty());
}

TEST_F(Fixture, PrefixNoPeerAcceptsIsDropped) {
  apply("10.245.1.128/25", {ip("198.18.0.12")});  // beyond le 24
  apply("10.99.0.0/16", {ip("198.18.0.12")});
  EXPECT_TRUE(table.take_pending().empty());
  EXPECT_EQ(table.stats().no_peer, 2u);
}

TEST_F(Fixture, NonBgpRoutesIgnoredAndDisplaceOurs) {
  auto r = fpm::make_bgp_route(pfx("10.245.0.0/16"), {ip("198.18.0.12")});
  r.protocol = 196;
  table.apply(r);
  EXPECT_TRUE(table.take_pending().empty());
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  table.take_pending();
  table.apply(r);  // zebra now prefers a static route for the prefix
  EXPECT_EQ(str(table.take_pending()), "delta -10.245.0.0/16@1500");
  EXPECT_EQ(table.stats().non_bgp_ignored, 2u);
}

TEST_F(Fixture, OtherTablesIgnored) {
  auto r = fpm::make_bgp_route(pfx("10.245.0.0/16"), {ip("198.18.0.12")});
  r.table = 1000;
  table.apply(r);
  EXPECT_TRUE(table.take_pending().empty());
  EXPECT_EQ(table.stats().other_table_ignored, 1u);
}

TEST_F(Fixture, ZeroNextHopsRemoves) {
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  table.take_pending();
  auto r = fpm::make_bgp_route(pfx("10.245.0.0/16"), {});
  r.multipath = true;
  table.apply(r);
  EXPECT_EQ(str(table.take_pending()), "delta -10.245.0.0/16@1500");
  EXPECT_EQ(table.stats().no_next_hop, 1u);
}

TEST_F(Fixture, UnknownNetworkWaitsThenResolves) {
  vnis.clear();
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  EXPECT_TRUE(table.take_pending().empty());
  EXPECT_EQ(table.stats().unresolved, 1u);
  vnis["fed"] = 1600;
  table.reresolve();
  EXPECT_EQ(str(table.take_pending()), "delta +10.245.0.0/16@1600[198.18.0.12]198.18.0.2");
  vnis["fed"] = 1700;  // network re-created with another VNI
  table.reresolve();
  EXPECT_EQ(str(table.take_pending()), "delta +10.245.0.0/16@1700[198.18.0.12]198.18.0.2 -10.245.0.0/16@1600");
}

TEST_F(Fixture, ResyncSweepsWhatWasNotResent) {
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  apply("10.245.1.0/24", {ip("198.18.0.12")});
  apply("10.246.0.0/16", {ip("198.18.0.13")});
  table.take_pending();
  table.begin_resync();
  apply("10.245.0.0/16", {ip("198.18.0.12")});  // resent unchanged
  apply("10.246.0.0/16", {ip("198.18.0.14")});  // resent with a new VTEP
  EXPECT_EQ(str(table.take_pending()), "delta +10.246.0.0/16@2000[198.18.0.14]198.18.0.3");
  table.end_resync();
  EXPECT_EQ(str(table.take_pending()), "delta -10.245.1.0/24@1500");
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.stats().swept, 1u);
  auto full = table.take_full();
  EXPECT_EQ(str(full), "full +10.245.0.0/16@1500[198.18.0.12]198.18.0.2 +10.246.0.0/16@2000[198.18.0.14]198.18.0.3");
}

TEST_F(Fixture, ReresolveWithoutChangeEmitsNothing) {
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  table.take_pending();
  table.reresolve();
  EXPECT_TRUE(table.take_pending().empty());
}

TEST_F(Fixture, OverMaxPrefixWithholdsEveryRouteOfThatPeer) {
  auto p = peers();
  p[0].max_prefix = 2;
  table.set_peers(p);
  apply("10.245.1.0/24", {ip("198.18.0.12")});
  apply("10.245.2.0/24", {ip("198.18.0.12")});
  apply("10.246.0.0/16", {ip("198.18.0.13")});  // another peer: unaffected
  table.take_pending();
  apply("10.245.3.0/24", {ip("198.18.0.12")});  // third route of peer b: over the limit
  EXPECT_EQ(str(table.take_pending()), "delta -10.245.1.0/24@1500 -10.245.2.0/24@1500");
  EXPECT_EQ(table.peers_over_limit(), std::vector<std::string>{"198.18.0.2"});
  EXPECT_EQ(table.stats().withheld, 3u);
  EXPECT_EQ(table.snapshot().size(), 1u);
  apply("10.245.3.0/24", {}, true);  // back at the limit: its routes return
  EXPECT_EQ(str(table.take_pending()),
            "delta +10.245.1.0/24@1500[198.18.0.12]198.18.0.2 +10.245.2.0/24@1500[198.18.0.12]198.18.0.2");
  EXPECT_EQ(table.stats().max_prefix_exceeded, 1u);
}

TEST_F(Fixture, WarningOnlyPeerOverMaxPrefixKeepsItsRoutesAndIsCounted) {
  auto p = peers();
  p[0].max_prefix = 1;
  p[0].max_prefix_warning_only = true;
  table.set_peers(p);
  apply("10.245.1.0/24", {ip("198.18.0.12")});
  table.take_pending();
  apply("10.245.2.0/24", {ip("198.18.0.12")});  // over the limit: kept, counted
  EXPECT_EQ(str(table.take_pending()), "delta +10.245.2.0/24@1500[198.18.0.12]198.18.0.2");
  EXPECT_TRUE(table.peers_over_limit().empty());
  EXPECT_EQ(table.peers_over_limit_kept(), std::vector<std::string>{"198.18.0.2"});
  EXPECT_EQ(table.stats().withheld, 0u);
  EXPECT_EQ(table.stats().max_prefix_exceeded, 1u);
  apply("10.245.2.0/24", {}, true);  // back at the limit
  table.take_pending();
  EXPECT_TRUE(table.peers_over_limit_kept().empty());
}

TEST_F(Fixture, BurstOverTheLimitInOneBatchEmitsNothing) {
  auto p = peers();
  p[0].max_prefix = 1;
  table.set_peers(p);
  apply("10.245.1.0/24", {ip("198.18.0.12")});
  apply("10.245.2.0/24", {ip("198.18.0.12")});
  EXPECT_TRUE(table.take_pending().empty());
}

// An FPM next hop becomes a VTEP allowed to send us VXLAN: outside the cluster's underlay
// ranges it is refused (counted), and a route left with none is withheld.
TEST_F(Fixture, NextHopsOutsideTheClustersVtepRangesAreRefused) {
  auto p = peers();
  p[0].vtep_ranges = {pfx("198.18.0.0/28")};
  table.set_peers(p);
  apply("10.245.1.0/24", {ip("198.18.0.12"), ip("203.0.113.9")});  // one allowed, one not
  apply("10.245.2.0/24", {ip("203.0.113.9")});                     // none allowed
  apply("10.246.0.0/16", {ip("203.0.113.9")});                     // peer c: no ranges, any
  EXPECT_EQ(str(table.take_pending()),
            "delta +10.245.1.0/24@1500[198.18.0.12]198.18.0.2 +10.246.0.0/16@2000[203.0.113.9]198.18.0.3");
  EXPECT_EQ(table.stats().next_hops_refused, 2u);
  EXPECT_EQ(table.stats().no_allowed_next_hop, 1u);
  // The next hop moves into the range: the withheld route is installed.
  apply("10.245.2.0/24", {ip("198.18.0.13")});
  EXPECT_EQ(str(table.take_pending()), "delta +10.245.2.0/24@1500[198.18.0.13]198.18.0.2");
  EXPECT_EQ(table.stats().no_allowed_next_hop, 0u);
  // Ranges widened by a reconfigure: the refused next hop is admitted without a resend.
  p[0].vtep_ranges = {pfx("198.18.0.0/28"), pfx("203.0.113.0/24")};
  table.set_peers(p);
  EXPECT_EQ(str(table.take_pending()), "delta +10.245.1.0/24@1500[198.18.0.12,203.0.113.9]198.18.0.2");
}

// The allowed next hops are kept as a mask over the offered ones (route_table.hpp): a resend
// whose offered list changed but whose allowed VTEPs did not changes nothing for the consumer,
// and what it holds afterwards is still the allowed VTEP, not the one at its old position.
TEST_F(Fixture, ResendWithOtherRefusedNextHopsKeepsTheAllowedOne) {
  auto p = peers();
  p[0].vtep_ranges = {pfx("198.18.0.0/28")};
  table.set_peers(p);
  apply("10.245.1.0/24", {ip("198.18.0.12"), ip("203.0.113.9")});
  EXPECT_EQ(str(table.take_pending()), "delta +10.245.1.0/24@1500[198.18.0.12]198.18.0.2");
  apply("10.245.1.0/24", {ip("10.0.0.1"), ip("198.18.0.12")});  // the refused one now sorts first
  EXPECT_EQ(str(table.take_pending()), "delta");
  const auto routes = table.snapshot();
  ASSERT_EQ(routes.size(), 1u);
  ASSERT_EQ(routes[0].vteps.size(), 1u);
  EXPECT_EQ(routes[0].vteps[0].str(), "198.18.0.12");
  EXPECT_EQ(table.stats().next_hops_refused, 2u);
}

TEST_F(Fixture, PeerChangeReresolves) {
  apply("10.246.0.0/16", {ip("198.18.0.13")});
  table.take_pending();
  auto p = peers();
  p.pop_back();  // peer c removed: its routes have no peer any more
  table.set_peers(p);
  EXPECT_EQ(str(table.take_pending()), "delta -10.246.0.0/16@2000");
}

// bgpd restarted (RestartHold decides when): zebra's sweep of its stale routes is held; the
// routes the peer sends again stay without any change reaching the consumer; release_held()
// removes the rest.
TEST_F(Fixture, HeldDeletesKeepTheRouteUntilReleasedAndAResendCancelsThem) {
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  apply("10.245.1.0/24", {ip("198.18.0.12")});
  table.take_pending();
  table.hold_deletes(true);
  apply("10.245.0.0/16", {}, true);
  apply("10.245.1.0/24", {}, true);
  apply("10.245.9.0/24", {}, true);  // a delete of a route we never had: nothing to hold
  EXPECT_TRUE(table.take_pending().empty());
  EXPECT_EQ(table.held(), 2u);
  EXPECT_EQ(table.stats().deletes_held, 2u);
  apply("10.245.0.0/16", {ip("198.18.0.12")});  // the peer sent it again: unchanged, not held
  EXPECT_TRUE(table.take_pending().empty());
  EXPECT_EQ(table.held(), 1u);
  table.hold_deletes(false);
  EXPECT_EQ(table.release_held(), 1u);
  EXPECT_EQ(str(table.take_pending()), "delta -10.245.1.0/24@1500");
  EXPECT_EQ(table.stats().held_released, 1u);
  apply("10.245.0.0/16", {}, true);  // not holding: at once
  EXPECT_EQ(str(table.take_pending()), "delta -10.245.0.0/16@1500");
}

TEST_F(Fixture, ARouteOfAnotherProtocolIsNotHeld) {
  apply("10.245.0.0/16", {ip("198.18.0.12")});
  table.take_pending();
  table.hold_deletes(true);
  apply("10.245.0.0/16", {}, true);
  auto other = fpm::make_bgp_route(pfx("10.245.0.0/16"), {ip("198.18.0.12")}, false);
  other.protocol = 4;  // static: zebra forwards the prefix elsewhere now
  table.apply(other);
  EXPECT_EQ(str(table.take_pending()), "delta -10.245.0.0/16@1500");
  EXPECT_EQ(table.held(), 0u);
}

}  // namespace
