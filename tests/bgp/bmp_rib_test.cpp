// BmpRib (bgp/bmp_rib.hpp): routes per monitored peer turned into zebra-like route messages.
// Each test feeds peer events and updates as the station would and checks the messages given
// out (one line per message: "+10.245.1.0/24 via 198.18.0.2,198.18.0.3" or "-10.245.1.0/24"),
// the full-table signal and the counters. The clock is a variable.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/bgp/test_support.hpp"
#include "bgp/bmp_rib.hpp"
#include "bgp/route_table.hpp"

namespace vxfed::bgp {
namespace {

using net::Ipv4Addr, net::Ipv4Prefix;
using namespace std::chrono_literals;
using Lines = std::vector<std::string>;

Ipv4Prefix pfx(const char* s) { return *Ipv4Prefix::parse(s); }
Ipv4Addr addr(const char* s) { return *Ipv4Addr::parse(s); }
bmp::PeerKey peer(const char* a, std::uint64_t rd = 0) { return {rd, addr(a)}; }

bmp::Update announce(std::initializer_list<const char*> prefixes, const char* next_hop) {
  bmp::Update u;
  for (auto p : prefixes) u.announced.push_back(pfx(p));
  u.next_hop = addr(next_hop);
  return u;
}
bmp::Update withdraw(std::initializer_list<const char*> prefixes) {
  bmp::Update u;
  for (auto p : prefixes) u.withdrawn.push_back(pfx(p));
  return u;
}
bmp::Update eor() {
  bmp::Update u;
  u.end_of_rib = true;
  return u;
}

std::string line(const fpm::RouteMessage& r) { return testing::route_line(r); }

class BmpRibTest : public ::testing::Test {
 protected:
  BmpRibTest() { make({}); }
  void make(BmpRibOptions options) {
    BmpRib::Handlers h;
    h.on_route = [this](const fpm::RouteMessage& m) {
      lines_.push_back(line(m));
      last_ = m;
    };
    h.on_full_table = [this] { ++full_tables_; };
    rib_ = std::make_unique<BmpRib>(h, options);
  }
  Lines take() { return std::exchange(lines_, {}); }

  const bmp::PeerKey a_ = peer("10.0.0.1"), b_ = peer("10.0.0.2");
  BmpRib::Clock::time_point t0_ = BmpRib::Clock::time_point{} + 1000s;
  std::unique_ptr<BmpRib> rib_;
  Lines lines_;
  fpm::RouteMessage last_;
  int full_tables_ = 0;
};

TEST_F(BmpRibTest, RoutesAreGivenAsZebraWouldSendThem) {
  rib_->session_started(t0_);
  rib_->peer_up(a_);
  rib_->update(a_, announce({"10.245.1.0/24", "10.245.2.0/24"}, "198.18.0.2"));
  EXPECT_EQ(take(), (Lines{"+10.245.1.0/24 via 198.18.0.2", "+10.245.2.0/24 via 198.18.0.2"}));
  EXPECT_EQ(last_.protocol, fpm::kRtprotBgp);
  EXPECT_EQ(last_.table, fpm::kRtTableMain);
  EXPECT_EQ(last_.family, 2);
  EXPECT_FALSE(last_.multipath);

  // The route table (the one consumer-facing table) takes them as it takes zebra's.
  PeerConfig pc;
  pc.address = addr("10.0.0.1");
  pc.remote_asn = 65002;
  pc.vni = 5001;
  pc.accept.push_back({pfx("10.245.0.0/16"), 0, 24});
  RouteTable table({pc}, [](const std::string&) { return std::nullopt; });
  table.apply(last_);
  auto up = table.take_pending();
  ASSERT_EQ(up.upserts.size(), 1u);
  EXPECT_EQ(up.upserts[0].prefix, pfx("10.245.2.0/24"));
  EXPECT_EQ(up.upserts[0].vni, 5001u);
  ASSERT_EQ(up.upserts[0].vteps.size(), 1u);
  EXPECT_EQ(up.upserts[0].vteps[0], addr("198.18.0.2"));

  rib_->update(a_, withdraw({"10.245.1.0/24", "10.99.0.0/16"}));  // the second never held
  EXPECT_EQ(take(), (Lines{"-10.245.1.0/24"}));
  EXPECT_TRUE(last_.is_delete);
  EXPECT_EQ(rib_->stats().routes, 1u);
  EXPECT_EQ(rib_->routes_of(a_), 1u);
}

// A prefix's paths sit in one record, two of them inline (bmp_rib.hpp): a third peer's path
// goes past them, and a peer forgotten leaves its number to the next one without leaving a
// path behind.
TEST_F(BmpRibTest, ThreePeersOnOnePrefixAndAPeerNumberReused) {
  const auto c = peer("10.0.0.3"), d = peer("10.0.0.4");
  rib_->session_started(t0_);
  rib_->peer_up(a_);
  rib_->peer_up(b_);
  rib_->peer_up(c);
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  rib_->update(b_, announce({"10.245.1.0/24"}, "198.18.0.3"));
  rib_->update(c, announce({"10.245.1.0/24", "10.245.2.0/24"}, "198.18.0.4"));
  EXPECT_EQ(take(), (Lines{"+10.245.1.0/24 via 198.18.0.2", "+10.245.1.0/24 via 198.18.0.2,198.18.0.3",
                           "+10.245.1.0/24 via 198.18.0.2,198.18.0.3,198.18.0.4", "+10.245.2.0/24 via 198.18.0.4"}));
  EXPECT_EQ(rib_->stats().routes, 4u);
  EXPECT_EQ(rib_->stats().prefixes, 2u);
  rib_->update(b_, withdraw({"10.245.1.0/24"}));
  EXPECT_EQ(take(), (Lines{"+10.245.1.0/24 via 198.18.0.2,198.18.0.4"}));
  rib_->peer_down(a_);  // forgotten: its number is free again
  EXPECT_EQ(take(), (Lines{"+10.245.1.0/24 via 198.18.0.4"}));
  rib_->peer_up(d);
  EXPECT_EQ(rib_->routes_of(d), 0u);
  rib_->update(d, announce({"10.245.2.0/24"}, "198.18.0.7"));
  EXPECT_EQ(take(), (Lines{"+10.245.2.0/24 via 198.18.0.4,198.18.0.7"}));
  rib_->peer_down(c);
  EXPECT_EQ(take(), (Lines{"-10.245.1.0/24", "+10.245.2.0/24 via 198.18.0.7"}));
  EXPECT_EQ(rib_->routes_per_peer(), (std::map<bmp::PeerKey, std::size_t>{{b_, 0}, {d, 1}}));
  EXPECT_EQ(rib_->stats().routes, 1u);
  EXPECT_EQ(rib_->stats().prefixes, 1u);
}

TEST_F(BmpRibTest, TwoPeersWithDifferentNextHopsGiveEcmpAndOnePeerDownLeavesTheOther) {
  rib_->session_started(t0_);
  rib_->peer_up(a_);
  rib_->peer_up(b_);
  rib_->update(b_, announce({"10.245.1.0/24"}, "198.18.0.9"));
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));  // again: no change, nothing sent
  EXPECT_EQ(take(), (Lines{"+10.245.1.0/24 via 198.18.0.9", "+10.245.1.0/24 via 198.18.0.2,198.18.0.9"}));
  EXPECT_TRUE(last_.multipath);
  // Both peers with the same next hop: one next hop, not two.
  rib_->update(a_, announce({"10.245.2.0/24"}, "198.18.0.5"));
  rib_->update(b_, announce({"10.245.2.0/24"}, "198.18.0.5"));
  EXPECT_EQ(take(), (Lines{"+10.245.2.0/24 via 198.18.0.5"}));

  rib_->peer_down(b_);
  EXPECT_EQ(take(), (Lines{"+10.245.1.0/24 via 198.18.0.2"}));  // 10.245.2.0/24 unchanged: A has it
  EXPECT_EQ(rib_->stats().peer_down_withdrawn, 2u);
  EXPECT_EQ(rib_->stats().peers_up, 1u);
  EXPECT_EQ(rib_->stats().prefixes, 2u);
  rib_->peer_down(a_);
  EXPECT_EQ(take(), (Lines{"-10.245.1.0/24", "-10.245.2.0/24"}));
  EXPECT_EQ(rib_->stats().prefixes, 0u);
  EXPECT_EQ(rib_->stats().routes, 0u);
}

TEST_F(BmpRibTest, MoreNextHopsThanAFrameHoldsAreCutAndFlagged) {
  rib_->session_started(t0_);
  for (std::uint32_t i = 0; i < fpm::kMaxNextHops + 3; ++i) {
    const bmp::PeerKey p{0, Ipv4Addr{0x0a000100 + i}};
    rib_->peer_up(p);
    bmp::Update u;
    u.announced.push_back(pfx("10.245.1.0/24"));
    u.next_hop = Ipv4Addr{0xc6120000 + 100 - i};  // descending: the message must sort them
    rib_->update(p, u);
  }
  EXPECT_EQ(last_.next_hop_count, fpm::kMaxNextHops);
  EXPECT_TRUE(last_.next_hops_truncated);
  for (std::uint8_t i = 1; i < last_.next_hop_count; ++i)
    EXPECT_LT(last_.next_hops[i - 1].gateway, last_.next_hops[i].gateway);
  EXPECT_GT(rib_->stats().next_hops_truncated, 0u);
}

TEST_F(BmpRibTest, APeerDownOrRoutesOfAPeerNeverSeenChangeNothing) {
  rib_->session_started(t0_);
  rib_->peer_up(a_);
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  take();
  rib_->peer_down(b_);
  rib_->update(b_, withdraw({"10.245.1.0/24"}));
  rib_->update(b_, announce({"10.245.9.0/24"}, "198.18.0.9"));
  rib_->update(b_, eor());
  EXPECT_TRUE(take().empty());
  EXPECT_EQ(rib_->stats().unknown_peer, 4u);
  EXPECT_EQ(rib_->stats().routes, 1u);
  EXPECT_EQ(rib_->stats().peers_up, 1u);
  EXPECT_EQ(rib_->stats().end_of_ribs, 0u);
}

// The reconnect of docs/bgp.md: bgpd resends its table; End-of-RIB sweeps what it did not.
TEST_F(BmpRibTest, ReconnectAndEndOfRibSweepOnlyWhatWasNotResent) {
  rib_->session_started(t0_);
  rib_->peer_up(a_);
  rib_->peer_up(b_);
  rib_->update(a_, announce({"10.245.1.0/24", "10.245.2.0/24", "10.245.3.0/24"}, "198.18.0.2"));
  rib_->update(b_, announce({"10.245.3.0/24", "10.245.4.0/24"}, "198.18.0.9"));
  rib_->update(a_, eor());
  rib_->update(b_, eor());
  EXPECT_EQ(full_tables_, 1);
  take();

  rib_->session_lost();  // TCP closed: nothing changes
  EXPECT_TRUE(take().empty());
  EXPECT_EQ(rib_->stats().routes, 5u);
  EXPECT_FALSE(rib_->stale_deadline());

  rib_->session_started(t0_ + 10s);
  EXPECT_TRUE(rib_->resyncing());
  EXPECT_EQ(rib_->stats().stale, 5u);
  rib_->peer_up(a_);
  rib_->peer_up(b_);
  // A resends 1 and 3 (3 with a new next hop), not 2; B resends 4, not 3.
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  rib_->update(a_, announce({"10.245.3.0/24"}, "198.18.0.3"));
  rib_->update(b_, announce({"10.245.4.0/24"}, "198.18.0.9"));
  EXPECT_EQ(take(), (Lines{"+10.245.3.0/24 via 198.18.0.3,198.18.0.9"}));
  rib_->update(a_, eor());
  EXPECT_EQ(take(), (Lines{"-10.245.2.0/24"}));
  EXPECT_EQ(full_tables_, 1) << "B has not sent its End-of-RIB yet";
  rib_->update(b_, eor());
  EXPECT_EQ(take(), (Lines{"+10.245.3.0/24 via 198.18.0.3"}));
  EXPECT_EQ(full_tables_, 2);
  EXPECT_FALSE(rib_->resyncing());
  EXPECT_EQ(rib_->stats().stale_swept, 2u);
  EXPECT_EQ(rib_->stats().stale, 0u);
  EXPECT_EQ(rib_->routes_of(a_), 2u);
  EXPECT_EQ(rib_->routes_of(b_), 1u);

  // replay() gives the whole table (for the adapter's full resync of its route table).
  rib_->replay();
  EXPECT_EQ(take(), (Lines{"+10.245.1.0/24 via 198.18.0.2", "+10.245.3.0/24 via 198.18.0.3",
                           "+10.245.4.0/24 via 198.18.0.9"}));
}

// FRR sends no End-of-RIB when the station was connected before the peer came up; a peer that
// never comes back up does not send one either. The limit sweeps what is still stale.
TEST_F(BmpRibTest, TheStaleLimitSweepsWhatNoEndOfRibSwept) {
  make({.stale_limit = 30s});
  rib_->session_started(t0_);
  rib_->peer_up(a_);
  rib_->peer_up(b_);
  rib_->update(a_, announce({"10.245.1.0/24", "10.245.2.0/24"}, "198.18.0.2"));
  rib_->update(b_, announce({"10.245.9.0/24"}, "198.18.0.9"));
  EXPECT_EQ(full_tables_, 0);
  take();

  rib_->session_started(t0_ + 100s);
  rib_->peer_up(a_);  // B never comes back up
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  ASSERT_TRUE(rib_->stale_deadline());
  EXPECT_EQ(*rib_->stale_deadline(), t0_ + 130s);
  rib_->expire_stale(t0_ + 129s);
  EXPECT_TRUE(take().empty());
  EXPECT_EQ(full_tables_, 0);
  rib_->expire_stale(t0_ + 130s);
  EXPECT_EQ(take(), (Lines{"-10.245.2.0/24", "-10.245.9.0/24"}));
  EXPECT_EQ(full_tables_, 1);
  EXPECT_EQ(rib_->stats().swept_by_limit, 2u);
  EXPECT_FALSE(rib_->stale_deadline());
  EXPECT_EQ(rib_->routes_per_peer(), (std::map<bmp::PeerKey, std::size_t>{{a_, 1}}));  // B forgotten
  rib_->expire_stale(t0_ + 500s);  // nothing more to do
  EXPECT_TRUE(take().empty());
  EXPECT_EQ(full_tables_, 1);
}

TEST_F(BmpRibTest, ALostSessionKeepsEveryRouteAndStopsTheStaleClock) {
  make({.stale_limit = 30s});
  rib_->session_started(t0_);
  rib_->peer_up(a_);
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  rib_->update(a_, eor());
  rib_->session_started(t0_ + 10s);  // reconnect, then lost again before anything was resent
  rib_->session_lost();
  take();
  EXPECT_FALSE(rib_->stale_deadline());
  rib_->expire_stale(t0_ + 1000s);  // bgpd away for long: its routes stay
  EXPECT_TRUE(take().empty());
  EXPECT_EQ(rib_->stats().routes, 1u);
  EXPECT_EQ(rib_->stats().peers_up, 0u);
  // Routes of a peer not up in the new session are not taken.
  rib_->update(a_, announce({"10.245.7.0/24"}, "198.18.0.2"));
  EXPECT_TRUE(take().empty());

  // The next session marks again and starts the clock from its own start.
  rib_->session_started(t0_ + 2000s);
  EXPECT_EQ(*rib_->stale_deadline(), t0_ + 2030s);
  rib_->peer_up(a_);
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  rib_->update(a_, eor());
  EXPECT_TRUE(take().empty());  // unchanged: nothing to tell
  EXPECT_EQ(full_tables_, 2);
  EXPECT_EQ(rib_->stats().stale_swept, 0u);
}

TEST_F(BmpRibTest, APeerDownDuringTheResyncEndsTheWaitForIt) {
  rib_->session_started(t0_);
  rib_->peer_up(a_);
  rib_->peer_up(b_);
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  rib_->update(b_, announce({"10.245.2.0/24"}, "198.18.0.9"));
  rib_->session_started(t0_ + 5s);
  rib_->peer_up(a_);
  rib_->peer_up(b_);
  rib_->update(a_, eor());
  take();
  EXPECT_EQ(full_tables_, 0);
  rib_->peer_down(b_);
  EXPECT_EQ(take(), (Lines{"-10.245.2.0/24"}));
  EXPECT_EQ(full_tables_, 1);
  EXPECT_EQ(rib_->stats().routes, 0u);
}

TEST_F(BmpRibTest, AFreshRibWaitsForThePeersThatComeUp) {
  rib_->session_started(t0_);
  rib_->expire_stale(t0_ + 1s);
  EXPECT_EQ(full_tables_, 0) << "no peer known yet: only End-of-RIBs or the limit end the resync";
  rib_->peer_up(a_);
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  rib_->update(a_, eor());
  EXPECT_EQ(full_tables_, 1);
  EXPECT_EQ(take(), (Lines{"+10.245.1.0/24 via 198.18.0.2"}));
}

// bgpd's own status ends what BMP alone cannot: a reconnect with no peer up (no End-of-RIB
// ever comes), a peer that came up after the session started (FRR sends its routes, no
// End-of-RIB), a peer that stayed down (its Peer Down is never sent in the new session).
TEST_F(BmpRibTest, BgpdsOwnStatusEndsAResyncBmpCannot) {
  const auto started_long_ago = t0_ - 600s;
  // Before: a and b each had a route.
  rib_->session_started(t0_);
  rib_->peer_up(a_);
  rib_->peer_up(b_);
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  rib_->update(b_, announce({"10.245.2.0/24"}, "198.18.0.3"));
  rib_->update(a_, eor());
  rib_->update(b_, eor());
  ASSERT_EQ(full_tables_, 1);
  take();

  // Reconnect: a comes up again (re-sends its route, no End-of-RIB), b stays down.
  const auto t1 = t0_ + 10s;
  rib_->session_started(t1);
  rib_->peer_up(a_);
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  const std::vector<BgpdPeer> status{{a_.address, true, 1}, {b_.address, false, 0}};
  // Too soon after the session started: bgpd may still be sending.
  rib_->bgpd_peers(status, t1 + 1s, started_long_ago);
  EXPECT_TRUE(rib_->resyncing());
  EXPECT_TRUE(take().empty());
  // A bgpd that has just started: b may still be coming up; a is through, b is still awaited.
  rib_->bgpd_peers(status, t1 + 5s, t1 + 4s);
  EXPECT_TRUE(rib_->resyncing());
  EXPECT_TRUE(take().empty());
  // A settled bgpd that says b is down: b's stale route goes, the table is whole.
  rib_->bgpd_peers(status, t1 + 6s, started_long_ago);
  EXPECT_FALSE(rib_->resyncing());
  EXPECT_EQ(take(), (Lines{"-10.245.2.0/24"}));
  EXPECT_EQ(full_tables_, 2);
  EXPECT_EQ(rib_->stats().settled_by_bgpd, 2u);

  // A peer bgpd has Established whose routes have not all come over BMP yet is waited for.
  const auto t2 = t1 + 20s;
  rib_->session_started(t2);
  rib_->peer_up(a_);
  rib_->bgpd_peers({{a_.address, true, 1}}, t2 + 5s, started_long_ago);
  EXPECT_TRUE(rib_->resyncing()) << "a's route was not re-sent yet";
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  rib_->bgpd_peers({{a_.address, true, 1}}, t2 + 6s, started_long_ago);
  EXPECT_FALSE(rib_->resyncing());
  EXPECT_TRUE(take().empty()) << "nothing changed for the consumer";

  // No peer at all (a fresh RIB, bgpd with no session up): the first settled poll ends it.
  make({});
  rib_->session_started(t0_);
  rib_->bgpd_peers({}, t0_ + 1s, started_long_ago);
  EXPECT_TRUE(rib_->resyncing());
  rib_->bgpd_peers({}, t0_ + 4s, started_long_ago);
  EXPECT_FALSE(rib_->resyncing());
  EXPECT_EQ(full_tables_, 4);  // the counter spans both RIBs
  // bgpd has a peer Established whose Peer Up has not come: not whole yet.
  rib_->session_started(t0_ + 10s);
  rib_->bgpd_peers({{a_.address, true, 0}}, t0_ + 20s, started_long_ago);
  EXPECT_TRUE(rib_->resyncing());
}


// Graceful restart: what a Peer Down does, from both OPENs' capabilities and the reason.
bmp::GracefulRestartCap gr_cap(std::uint16_t restart_time = 120, bool ipv4 = true, bool n_bit = true) {
  bmp::GracefulRestartCap c;
  c.present = true;
  c.restart_time_s = restart_time;
  c.ipv4_unicast = ipv4;
  c.notification = n_bit;
  return c;
}
bmp::PeerDown down(std::uint8_t reason, std::optional<std::uint8_t> code = std::nullopt) {
  bmp::PeerDown d;
  d.reason = reason;
  d.notify_code = code;
  if (code) d.notify_subcode = 2;
  if (reason == 2) d.fsm_event = 0;
  return d;
}
bmp::PeerUp gr_up(std::uint16_t restart_time = 120) {
  bmp::PeerUp up;
  up.sent_gr = gr_cap();
  up.received_gr = gr_cap(restart_time);
  return up;
}

TEST(BmpPeerDownAction, BgpdKeepsRoutesOnlyWithGracefulRestartBothWaysAndAReasonItKeepsThemFor) {
  using A = PeerDownAction;
  const auto both = gr_cap(), none = bmp::GracefulRestartCap{};
  // FRR 8.4's reason for every local close (the peer's crash, a hold timer expiry, but also
  // `neighbor shutdown`, `clear bgp`, BFD down): bgpd's status decides.
  EXPECT_EQ(peer_down_action(both, both, down(2)), A::keep_ask_bgpd);
  EXPECT_EQ(peer_down_action(both, both, down(4)), A::keep_ask_bgpd);
  // No graceful restart negotiated: withdrawn at once, whatever the reason.
  for (std::uint8_t reason : {1, 2, 3, 4, 5}) {
    EXPECT_EQ(peer_down_action(none, both, down(reason, 4)), A::withdraw) << int(reason);
    EXPECT_EQ(peer_down_action(both, none, down(reason, 4)), A::withdraw) << int(reason);
  }
  EXPECT_EQ(peer_down_action(both, gr_cap(120, false), down(2)), A::withdraw) << "helper-only peer: no IPv4 unicast";
  EXPECT_EQ(peer_down_action(both, gr_cap(0), down(2)), A::withdraw) << "restart time 0";
  // De-configured, and the later RFCs' reasons.
  EXPECT_EQ(peer_down_action(both, both, down(5)), A::withdraw);
  EXPECT_EQ(peer_down_action(both, both, down(6)), A::withdraw);
  // A NOTIFICATION: a Cease (shutdown, reset, Hard Reset) always ends it; another only with the
  // N bit both ways (RFC 8538), and whole.
  EXPECT_EQ(peer_down_action(both, both, down(3, 6)), A::withdraw);
  EXPECT_EQ(peer_down_action(both, both, down(1, 6)), A::withdraw);
  EXPECT_EQ(peer_down_action(both, both, down(3, 4)), A::keep_ask_bgpd) << "hold timer expired, N both ways";
  EXPECT_EQ(peer_down_action(both, both, down(1, 4)), A::keep_ask_bgpd);
  EXPECT_EQ(peer_down_action(both, gr_cap(120, true, false), down(3, 4)), A::withdraw) << "no N bit from the peer";
  EXPECT_EQ(peer_down_action(gr_cap(120, true, false), both, down(1, 4)), A::withdraw) << "no N bit from bgpd";
  EXPECT_EQ(peer_down_action(both, both, down(3)), A::withdraw) << "a NOTIFICATION not whole";
}

class BmpRibGrTest : public BmpRibTest {
 protected:
  BmpRibGrTest() {
    BmpRib::Handlers h;
    h.on_route = [this](const fpm::RouteMessage& m) { lines_.push_back(line(m)); };
    h.on_full_table = [this] { ++full_tables_; };
    h.ask_bgpd = [this] { ++asked_; };
    rib_ = std::make_unique<BmpRib>(h, BmpRibOptions{});
    rib_->session_started(t0_);
    rib_->peer_up(a_, gr_up(), t0_);
    rib_->peer_up(b_, gr_up(), t0_);
    rib_->update(a_, announce({"10.245.1.0/24", "10.245.2.0/24", "10.245.3.0/24"}, "198.18.0.2"));
    rib_->update(a_, eor());
    rib_->update(b_, eor());
    take();
  }
  int asked_ = 0;
  const BmpRib::Clock::time_point down_at_ = t0_ + 60s;
  const BmpRib::Clock::time_point started_long_ago_ = t0_ - 3600s;
};

TEST_F(BmpRibGrTest, APeerBgpdKeepsStaleKeepsItsRoutesUntilItIsBackAndHasResentThem) {
  rib_->peer_down(a_, down(2), down_at_);
  EXPECT_TRUE(take().empty()) << "kept while bgpd is asked";
  EXPECT_EQ(asked_, 1);
  EXPECT_TRUE(rib_->wants_bgpd_peers());
  EXPECT_EQ(rib_->stats().stale, 3u);
  EXPECT_EQ(rib_->stale_deadline(), down_at_ + 120s) << "the peer's restart time";
  // A poll taken before the Peer Down decides nothing (it said a was Established).
  rib_->bgpd_peers({{a_.address, true, 3, 0}}, down_at_ - 1s, started_long_ago_);
  rib_->bgpd_peers({{a_.address, false, 0, 0}}, down_at_ - 1s, started_long_ago_);
  EXPECT_TRUE(take().empty());
  // bgpd holds them stale: kept.
  rib_->bgpd_peers({{a_.address, false, 3, 3}}, down_at_ + 10ms, started_long_ago_);
  EXPECT_EQ(rib_->stats().gr_confirmed, 1u);
  rib_->expire_stale(down_at_ + 119s);
  EXPECT_TRUE(take().empty()) << "within the restart time";

  // Back: bgpd sends a withdrawal of a stale route right after the Peer Up (FRR 8.4 does), then
  // the table. The consumer sees no change at all.
  const auto back = down_at_ + 30s;
  rib_->peer_up(a_, gr_up(), back);
  rib_->update(a_, withdraw({"10.245.1.0/24"}));
  EXPECT_EQ(rib_->stats().gr_stale_withdraw_kept, 1u);
  rib_->update(a_, announce({"10.245.1.0/24", "10.245.2.0/24"}, "198.18.0.2"));
  EXPECT_TRUE(take().empty());
  EXPECT_EQ(rib_->stale_deadline(), back + 360s) << "bgpd's stale-path time once the peer is back";
  // bgpd still has stale paths (no End-of-RIB from the peer yet): wait.
  rib_->bgpd_peers({{a_.address, true, 2, 1}}, back + 1s, started_long_ago_);
  EXPECT_TRUE(take().empty());
  // Nothing stale but no End-of-RIB from the peer (bgpd offered Graceful Restart, so one is
  // coming): its table may still be arriving.
  rib_->bgpd_peers({{a_.address, true, 2, 0, false}}, back + 2s, started_long_ago_);
  EXPECT_TRUE(take().empty());
  // bgpd is through: Established, End-of-RIB in, nothing stale, its 2 routes re-sent here:
  // 10.245.3.0/24, which the peer did not re-send, goes.
  rib_->bgpd_peers({{a_.address, true, 2, 0, true}}, back + 3s, started_long_ago_);
  EXPECT_EQ(take(), (Lines{"-10.245.3.0/24"}));
  EXPECT_EQ(rib_->stats().gr_recovered, 1u);
  EXPECT_EQ(rib_->stats().gr_peers, 0u);
  EXPECT_EQ(rib_->stats().stale, 0u);
  EXPECT_FALSE(rib_->wants_bgpd_peers());
  // A withdrawal now is the peer's own word.
  rib_->update(a_, withdraw({"10.245.2.0/24"}));
  EXPECT_EQ(take(), (Lines{"-10.245.2.0/24"}));
}

TEST_F(BmpRibGrTest, APeerBgpdFlushedIsWithdrawnAtItsFirstPollAfterThePeerDown) {
  // `neighbor shutdown`, `clear bgp`, BFD down: FRR 8.4 sends the same reason 2 and flushes.
  rib_->peer_down(a_, down(2), down_at_);
  EXPECT_TRUE(take().empty());
  // Still clearing (routes neither stale nor gone): asked again.
  rib_->bgpd_peers({{a_.address, false, 3, 0}}, down_at_ + 5ms, started_long_ago_);
  EXPECT_TRUE(take().empty());
  EXPECT_EQ(asked_, 2);
  rib_->bgpd_peers({{a_.address, false, 0, 0}}, down_at_ + 10ms, started_long_ago_);
  EXPECT_EQ(take(), (Lines{"-10.245.1.0/24", "-10.245.2.0/24", "-10.245.3.0/24"}));
  EXPECT_EQ(rib_->stats().gr_dropped_by_bgpd, 1u);
  EXPECT_EQ(rib_->routes_per_peer().count(a_), 0u);
  EXPECT_EQ(rib_->stats().stale, 0u);
  EXPECT_FALSE(rib_->wants_bgpd_peers());
  EXPECT_EQ(rib_->stale_deadline(), std::nullopt);

  // A peer bgpd no longer reports (de-configured) goes the same way.
  rib_->peer_up(a_, gr_up(), down_at_ + 1s);
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  take();
  rib_->peer_down(a_, down(2), down_at_ + 2s);
  rib_->bgpd_peers({{b_.address, true, 0, 0}}, down_at_ + 3s, started_long_ago_);
  EXPECT_EQ(take(), (Lines{"-10.245.1.0/24"}));
}

TEST_F(BmpRibGrTest, NoGracefulRestartOrACeaseWithdrawsAtOnce) {
  rib_->peer_down(a_, down(3, 6), down_at_);  // `neighbor shutdown` at the peer
  EXPECT_EQ(take(), (Lines{"-10.245.1.0/24", "-10.245.2.0/24", "-10.245.3.0/24"}));
  EXPECT_EQ(asked_, 0);
  // A peer up without the capability (its Peer Up said so): reason 2 withdraws at once too.
  rib_->peer_up(a_, bmp::PeerUp{}, down_at_ + 1s);
  rib_->update(a_, announce({"10.245.1.0/24"}, "198.18.0.2"));
  take();
  rib_->peer_down(a_, down(2), down_at_ + 2s);
  EXPECT_EQ(take(), (Lines{"-10.245.1.0/24"}));
  EXPECT_EQ(rib_->stats().gr_kept, 0u);
}

TEST_F(BmpRibGrTest, KeptRoutesGoAtTheRestartTimeOrTheEndOfRibAfterTheReturn) {
  rib_->peer_down(a_, down(2), down_at_);
  rib_->bgpd_peers({{a_.address, false, 3, 3}}, down_at_ + 10ms, started_long_ago_);
  // The peer never comes back: swept at its restart time, as bgpd's restart timer does.
  rib_->expire_stale(down_at_ + 120s);
  EXPECT_EQ(take(), (Lines{"-10.245.1.0/24", "-10.245.2.0/24", "-10.245.3.0/24"}));
  EXPECT_EQ(rib_->stats().gr_expired, 1u);
  EXPECT_EQ(rib_->routes_per_peer().count(a_), 0u);

  // Back with an End-of-RIB (a peer whose bgpd does pass it on): what was not re-sent goes.
  rib_->peer_up(a_, gr_up(), down_at_ + 200s);
  rib_->update(a_, announce({"10.245.1.0/24", "10.245.2.0/24"}, "198.18.0.2"));
  take();
  rib_->peer_down(a_, down(4), down_at_ + 210s);
  rib_->bgpd_peers({{a_.address, false, 2, 2}}, down_at_ + 211s, started_long_ago_);
  rib_->peer_up(a_, gr_up(), down_at_ + 215s);
  rib_->update(a_, announce({"10.245.2.0/24"}, "198.18.0.2"));
  rib_->update(a_, eor());
  EXPECT_EQ(take(), (Lines{"-10.245.1.0/24"}));
  EXPECT_EQ(rib_->stats().gr_peers, 0u);
  // Nothing left to time.
  EXPECT_EQ(rib_->stale_deadline(), std::nullopt);
}


TEST_F(BmpRibGrTest, ARestartedBgpdsResyncWaitsForThePeersEndOfRibNotJustItsCount) {
  // This node's bgpd restarted (vxfedd kept its routes across the lost BMP session): the peer
  // is Established again at once, but bgpd's accepted count is 0 until the peer's table comes.
  rib_->session_lost();
  const auto t1 = t0_ + 100s;
  rib_->session_started(t1);
  rib_->peer_up(a_, gr_up(), t1);
  rib_->peer_up(b_, gr_up(), t1);
  rib_->bgpd_peers({{a_.address, true, 0, 0, false}, {b_.address, true, 0, 0, false}}, t1 + 4s, started_long_ago_);
  EXPECT_TRUE(take().empty()) << "nothing swept on a count of a table still arriving";
  EXPECT_TRUE(rib_->resyncing());
  rib_->update(a_, announce({"10.245.1.0/24", "10.245.2.0/24"}, "198.18.0.2"));
  rib_->bgpd_peers({{a_.address, true, 2, 0, true}, {b_.address, true, 0, 0, true}}, t1 + 5s, started_long_ago_);
  EXPECT_EQ(take(), (Lines{"-10.245.3.0/24"}));
  EXPECT_FALSE(rib_->resyncing());
}

}  // namespace
}  // namespace vxfed::bgp
