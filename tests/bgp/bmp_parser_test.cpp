// The BMP parser and session (bgp/bmp_parser.hpp, bgp/bmp_session.hpp) on messages built as
// bgpd's BMP module sends them (bmp_messages.hpp): what a station takes, and every malformed or
// foreign message refused and counted without a route change.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bgp/bmp_parser.hpp"
#include "bgp/bmp_session.hpp"
#include "tests/bgp/bmp_messages.hpp"

namespace vxfed::bgp::bmp {
namespace {

using namespace test;

constexpr std::uint32_t kReflector = 0x0a000002;  // 10.0.0.2
constexpr std::uint32_t kVtep = 0xc6120005;       // 198.18.0.5

struct Seen {
  std::vector<std::string> events;
  PeerUp last_up;
  PeerDown last_down;
  Session session{Session::Handlers{
      [this](const PeerKey& k, const PeerHeader&, const PeerUp& up) {
        events.push_back("up " + k.address.str());
        last_up = up;
      },
      [this](const PeerKey& k, const PeerDown& d) {
        events.push_back("down " + k.address.str() + " " + std::to_string(d.reason));
        last_down = d;
      },
      [this](const PeerKey& k, const Update& u) {
        std::string e = "routes " + k.address.str();
        for (auto p : u.announced) e += " +" + net::Ipv4Addr{p.addr}.str() + "/" + std::to_string(p.len);
        for (auto p : u.withdrawn) e += " -" + net::Ipv4Addr{p.addr}.str() + "/" + std::to_string(p.len);
        if (u.next_hop) e += " via " + u.next_hop->str();
        if (u.end_of_rib) e += " eor";
        events.push_back(e);
      },
      [this] { events.push_back("init"); },
      [this] { events.push_back("term"); }}};
  std::uint64_t ignored(Ignored r) const { return session.counters().ignored[static_cast<std::size_t>(r)]; }
};

Buf announce(std::vector<std::pair<std::uint32_t, unsigned>> nlri, std::uint32_t nh = kVtep) {
  Buf attrs = attribute(1, {0});
  append(attrs, as_path({65001, 65002}));
  append(attrs, next_hop(nh));
  return update({}, attrs, nlri);
}

TEST(BmpParser, FramesNeedTheWholeMessageAndRefuseBadVersionsAndLengths) {
  Frame f;
  const Buf init = initiation();
  EXPECT_EQ(parse_frame(Bytes(init).first(5), f), FrameStatus::need_more);
  EXPECT_EQ(parse_frame(Bytes(init).first(init.size() - 1), f), FrameStatus::need_more);
  ASSERT_EQ(parse_frame(init, f), FrameStatus::ok);
  EXPECT_EQ(f.length, init.size());
  EXPECT_EQ(f.type, 4);
  EXPECT_EQ(parse_frame(message(4, {}, 2), f), FrameStatus::bad_version);
  Buf short_len = init;
  short_len[4] = 5;
  short_len[1] = short_len[2] = short_len[3] = 0;
  EXPECT_EQ(parse_frame(short_len, f), FrameStatus::bad_length);
  Buf huge = init;
  huge[1] = 0x7f;
  EXPECT_EQ(parse_frame(huge, f), FrameStatus::bad_length);
}

TEST(BmpParser, UpdateWithNextHopAsPathAndWithdrawals) {
  Buf attrs = attribute(1, {0});
  append(attrs, as_path({65001, 65002}));
  append(attrs, next_hop(kVtep));
  append(attrs, attribute(5, {0, 0, 0, 100}));  // LOCAL_PREF: read past
  const Buf msg = update({{0x0af40700, 24}}, attrs, {{0x0af40500, 24}, {0x0af40600, 26}});
  Update u;
  Malformed bad;
  ASSERT_TRUE(parse_update(msg, false, u, bad)) << bad.why;
  ASSERT_EQ(u.announced.size(), 2u);
  EXPECT_EQ(u.announced[1].addr, 0x0af40600u);
  EXPECT_EQ(u.announced[1].len, 26);
  ASSERT_EQ(u.withdrawn.size(), 1u);
  EXPECT_EQ(u.withdrawn[0].addr, 0x0af40700u);
  EXPECT_EQ(u.next_hop->value, kVtep);
  EXPECT_EQ(u.origin_as, 65002u);
  EXPECT_EQ(u.as_path_length, 2);
  EXPECT_FALSE(u.end_of_rib);
}

TEST(BmpParser, MpReachAndMpUnreachOfIpv4UnicastAndOtherFamilies) {
  Buf reach{0, 1, 1, 4};
  put32(reach, kVtep);
  reach.push_back(0);
  append(reach, prefix(0x0af40500, 24));
  Buf attrs = attribute(14, reach, 0x80);
  append(attrs, as_path({65001}));
  Update u;
  Malformed bad;
  ASSERT_TRUE(parse_update(update({}, attrs, {}), false, u, bad)) << bad.why;
  ASSERT_EQ(u.announced.size(), 1u);
  EXPECT_EQ(u.next_hop->value, kVtep);

  Buf v6{0, 2, 1, 16};
  for (int i = 0; i < 16; ++i) v6.push_back(0x20);
  v6.push_back(0);
  v6.push_back(64);
  for (int i = 0; i < 8; ++i) v6.push_back(0x20);
  ASSERT_TRUE(parse_update(update({}, attribute(14, v6, 0x80), {}), false, u, bad)) << bad.why;
  EXPECT_TRUE(u.other_family);
  EXPECT_TRUE(u.announced.empty()) << "an IPv6 prefix is never taken for IPv4";

  Buf unreach{0, 1, 1};
  append(unreach, prefix(0x0af40500, 24));
  ASSERT_TRUE(parse_update(update({}, attribute(15, unreach, 0x80), {}), false, u, bad)) << bad.why;
  ASSERT_EQ(u.withdrawn.size(), 1u);
  EXPECT_FALSE(u.end_of_rib);
}

TEST(BmpParser, EndOfRibIsAnEmptyUpdateOrAnEmptyMpUnreach) {
  Update u;
  Malformed bad;
  ASSERT_TRUE(parse_update(update({}, {}, {}), false, u, bad));
  EXPECT_TRUE(u.end_of_rib);
  ASSERT_TRUE(parse_update(update({}, attribute(15, {0, 1, 1}, 0x80), {}), false, u, bad));
  EXPECT_TRUE(u.end_of_rib);
  ASSERT_TRUE(parse_update(update({}, attribute(15, {0, 2, 1}, 0x80), {}), false, u, bad));
  EXPECT_FALSE(u.end_of_rib) << "IPv6's End-of-RIB is not IPv4's";
  EXPECT_TRUE(u.other_family);
}

TEST(BmpParser, TwoByteAsPathWhenThePeerHeaderSaysSo) {
  Buf v{2, 2};
  put16(v, 65001);
  put16(v, 65002);
  Buf attrs = attribute(2, v);
  append(attrs, next_hop(kVtep));
  Update u;
  Malformed bad;
  ASSERT_TRUE(parse_update(update({}, attrs, {{0x0af40500, 24}}), true, u, bad)) << bad.why;
  EXPECT_EQ(u.origin_as, 65002u);
  EXPECT_FALSE(parse_update(update({}, attrs, {{0x0af40500, 24}}), false, u, bad))
      << "read as 4-byte ASes the segment runs past the attribute";
}

// Every malformed UPDATE: refused with a reason, nothing taken.
TEST(BmpParser, MalformedUpdatesAreRefused) {
  struct Case {
    const char* name;
    Buf msg;
  };
  Buf bad_marker = announce({{0x0af40500, 24}});
  bad_marker[3] = 0;
  Buf wrong_length = announce({{0x0af40500, 24}});
  wrong_length[17] = static_cast<std::uint8_t>(wrong_length[17] + 1);
  Buf not_update = bgp(4, {});
  Buf long_prefix = announce({});
  long_prefix.push_back(33);
  for (int i = 0; i < 5; ++i) long_prefix.push_back(1);
  Buf cut_prefix = announce({});
  cut_prefix.push_back(24);
  cut_prefix.push_back(10);
  Buf nh5 = update({}, attribute(3, {1, 2, 3, 4, 5}), {{0x0af40500, 24}});
  Buf no_nh = update({}, as_path({65001}), {{0x0af40500, 24}});
  Buf attr_past = update({}, Buf{0x40, 3, 9, 1, 2, 3, 4}, {});
  Buf seg_past = update({}, attribute(2, {2, 5, 0, 0, 0, 1}), {});
  Buf seg_type = update({}, attribute(2, {9, 1, 0, 0, 0, 1}), {});
  Buf mp_nh = update({}, attribute(14, {0, 1, 1, 40, 1}, 0x80), {});
  const std::vector<Case> cases = {
      {"marker", bad_marker}, {"length", wrong_length}, {"not an UPDATE", not_update},
      {"prefix longer than 32", long_prefix}, {"prefix cut", cut_prefix}, {"NEXT_HOP 5 bytes", nh5},
      {"announced without a next hop", no_nh}, {"attribute past the attributes", attr_past},
      {"AS_PATH segment past the attribute", seg_past}, {"AS_PATH segment type", seg_type},
      {"MP_REACH next hop past the attribute", mp_nh},
  };
  for (const auto& c : cases) {
    // Re-frame the BGP length where the case did not mean to break it.
    Buf msg = c.msg;
    if (std::string(c.name) != "length" && msg.size() >= 19) {
      msg[16] = static_cast<std::uint8_t>(msg.size() >> 8);
      msg[17] = static_cast<std::uint8_t>(msg.size());
    }
    Update u;
    Malformed bad;
    EXPECT_FALSE(parse_update(msg, false, u, bad)) << c.name;
    EXPECT_STRNE(bad.why, "") << c.name;
  }
}

TEST(BmpSession, PeerUpRoutesEndOfRibAndPeerDownInOrderAcrossReadBoundaries) {
  Seen s;
  Buf stream = initiation();
  append(stream, peer_up(kReflector));
  append(stream, route_monitoring(kReflector, announce({{0x0af40500, 24}})));
  append(stream, statistics(kReflector));
  append(stream, route_monitoring(kReflector, update({{0x0af40500, 24}}, {}, {})));
  append(stream, route_monitoring(kReflector, update({}, {}, {})));
  append(stream, peer_down(kReflector, 3));
  // Fed three bytes at a time: every message crosses a read boundary.
  for (std::size_t i = 0; i < stream.size(); i += 3)
    ASSERT_TRUE(s.session.feed(Bytes(stream).subspan(i, std::min<std::size_t>(3, stream.size() - i))));
  const std::vector<std::string> want = {
      "init", "up 10.0.0.2", "routes 10.0.0.2 +10.244.5.0/24 via 198.18.0.5", "routes 10.0.0.2 -10.244.5.0/24",
      "routes 10.0.0.2 eor", "down 10.0.0.2 3"};
  EXPECT_EQ(s.events, want);
  EXPECT_EQ(s.session.counters().messages[static_cast<std::size_t>(MessageType::route_monitoring)], 3u);
  EXPECT_TRUE(s.session.peers_up().empty());
}

TEST(BmpSession, ForeignAndMalformedMessagesAreCountedAndChangeNothing) {
  Seen s;
  Buf stream = peer_up(kReflector);
  append(stream, route_monitoring(kReflector, announce({{0x0af40500, 24}}), 0));           // pre-policy
  append(stream, route_monitoring(kReflector, announce({{0x0af40500, 24}}), 0x40 | 0x10));  // Adj-RIB-Out
  append(stream, route_monitoring(kReflector, announce({{0x0af40500, 24}}), 0x40 | 0x80));  // IPv6 peer
  append(stream, route_monitoring(0x0a000009, update({{0x0af40500, 24}}, {}, {})));       // never up
  append(stream, peer_down(0x0a000009));                                                   // never up
  Buf truncated = peer_header(kReflector);
  truncated.resize(20);
  append(stream, message(0, truncated));                                                    // short peer header
  Buf bad_update = route_monitoring(kReflector, announce({{0x0af40500, 24}}));
  bad_update[6 + 42 + 17] = 200;                                                            // BGP length lies
  append(stream, bad_update);
  append(stream, message(9, {1, 2, 3}));                                                    // unknown type
  append(stream, message(6, peer_header(kReflector)));                                      // route mirroring
  ASSERT_TRUE(s.session.feed(stream));
  EXPECT_EQ(s.events, std::vector<std::string>{"up 10.0.0.2"}) << "no route change from any of them";
  EXPECT_EQ(s.ignored(Ignored::pre_policy), 1u);
  EXPECT_EQ(s.ignored(Ignored::adj_rib_out), 1u);
  EXPECT_EQ(s.ignored(Ignored::ipv6_peer), 1u);
  EXPECT_EQ(s.ignored(Ignored::unknown_peer), 2u);
  EXPECT_EQ(s.ignored(Ignored::malformed), 2u);
  EXPECT_EQ(s.ignored(Ignored::unknown_type), 1u);
  EXPECT_EQ(s.ignored(Ignored::route_mirroring), 1u);
  EXPECT_STRNE(s.session.last_malformed(), "");
}

// FRR 8.4 sends no Peer Up for a session established after an OPEN collision, yet monitors its
// routes: the first announcement stands for the Peer Up (without OPENs, so no graceful restart),
// and the Peer Down that follows is the peer's own.
TEST(BmpSession, AnAnnouncementFromAPeerNeverUpStandsForItsMissingPeerUp) {
  Seen s;
  Buf stream = route_monitoring(0x0a000009, update({{0x0af40700, 24}}, {}, {}));  // withdrawal: still nothing
  append(stream, route_monitoring(0x0a000009, announce({{0x0af40500, 24}})));
  append(stream, route_monitoring(0x0a000009, announce({{0x0af40600, 24}})));
  append(stream, peer_down(0x0a000009, 4));
  ASSERT_TRUE(s.session.feed(stream));
  const std::vector<std::string> want = {"up 10.0.0.9", "routes 10.0.0.9 +10.244.5.0/24 via 198.18.0.5",
                                         "routes 10.0.0.9 +10.244.6.0/24 via 198.18.0.5", "down 10.0.0.9 4"};
  EXPECT_EQ(s.events, want);
  EXPECT_EQ(s.session.counters().implied_peer_ups, 1u);
  EXPECT_EQ(s.ignored(Ignored::unknown_peer), 1u);
  EXPECT_FALSE(s.last_up.received_gr.present) << "no OPEN seen: no graceful restart assumed";
}

TEST(BmpSession, AFramingErrorStopsTheSessionForGood) {
  Seen s;
  Buf stream = peer_up(kReflector);
  Buf garbage(10 * 1024 * 1024, 0x41);  // 10 MB of 'A': version 65
  append(stream, garbage);
  EXPECT_FALSE(s.session.feed(stream));
  EXPECT_TRUE(s.session.failed());
  EXPECT_NE(s.session.framing_error().find("bad_version"), std::string::npos) << s.session.framing_error();
  EXPECT_FALSE(s.session.feed(route_monitoring(kReflector, announce({{0x0af40500, 24}}))));
  EXPECT_EQ(s.events, std::vector<std::string>{"up 10.0.0.2"});
}

Buf golden(const std::string& name) {
  std::ifstream f(std::string(BGP_GOLDEN_DIR) + "/" + name, std::ios::binary);
  return Buf((std::istreambuf_iterator<char>(f)), {});
}

// Captured from Debian 12's FRR 8.4.4 (2026-12-06): a node's bgpd as a BGP view (`router bgp
// 65001 view v`, `bmp connect 127.0.0.1 port 620 min-retry 100 max-retry 1000`, `bmp monitor
// ipv4 unicast post-policy`) and a speaker announcing 10.244.5.0/24 and 10.244.6.0/26 with next
// hop 198.18.0.5, then withdrawing the /26. The station connected before the BGP session was
// up: bgpd sent Peer Down for the peer not yet up (changes nothing), Peer Up, the routes as
// they came, and no End-of-RIB (it has no table to sync at that point).
TEST(BmpSession, ARealFrr84FeedAsThePeerComesUp) {
  const Buf capture = golden("bmp_frr84_peer_comes_up.bin");
  ASSERT_EQ(capture.size(), 702u);
  Seen s;
  ASSERT_TRUE(s.session.feed(capture)) << s.session.framing_error();
  const std::vector<std::string> want = {"init", "up 10.0.0.2", "routes 10.0.0.2 +10.244.5.0/24 via 198.18.0.5",
                                         "routes 10.0.0.2 +10.244.6.0/26 via 198.18.0.5",
                                         "routes 10.0.0.2 -10.244.6.0/26"};
  EXPECT_EQ(s.events, want);
  EXPECT_EQ(s.ignored(Ignored::unknown_peer), 2u);
  EXPECT_EQ(s.ignored(Ignored::malformed), 0u);
}

// The same bgpd when the station connected again with the session up (bgpd retried after
// ~0.1 s): its table resent, then End-of-RIB post-policy (and a pre-policy one, ignored).
TEST(BmpSession, ARealFrr84FeedAfterAReconnectEndsWithEndOfRib) {
  Seen s;
  ASSERT_TRUE(s.session.feed(golden("bmp_frr84_reconnect.bin"))) << s.session.framing_error();
  const std::vector<std::string> want = {"init", "up 10.0.0.2", "routes 10.0.0.2 +10.244.5.0/24 via 198.18.0.5",
                                         "routes 10.0.0.2 eor"};
  EXPECT_EQ(s.events, want);
  EXPECT_EQ(s.ignored(Ignored::pre_policy), 1u);
  EXPECT_EQ(s.ignored(Ignored::malformed), 0u);
}


Buf from_hex(std::string_view hex) {
  Buf b;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) b.push_back(static_cast<std::uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return b;
}

// The OPENs of a Peer Up from Debian 12's FRR 8.4.4 (2026-12-06, docs/bgp.md "Graceful restart
// on the BMP feed"): a view with `bgp graceful-restart` and `preserve-fw-state` and a speaker with
// `bgp graceful-restart`; then the speaker with `no bgp graceful-restart` (helper mode: the
// capability without any AFI/SAFI).
constexpr std::string_view kFrr84OpenSent =
    "ffffffffffffffffffffffffffffffff00620104fde90003c6120001450206010400010001020280000202020002024600020641040000fde90202060002064504000101010206490402766d0002084006c078000101800209470700010180000000";
constexpr std::string_view kFrr84OpenReceived =
    "ffffffffffffffffffffffffffffffff00620104fdea0003c6120002450206010400010001020280000202020002024600020641040000fdea0202060002064504000101010206490402766d0002084006c078000101000209470700010180000000";
constexpr std::string_view kFrr84OpenReceivedHelperOnly =
    "ffffffffffffffffffffffffffffffff005e0104fdea0003c6120002410206010400010001020280000202020002024600020641040000fdea0202060002064504000101010206490402766d0002044002c0780209470700010180000000";

TEST(BmpParser, PeerUpReadsBothOpensGracefulRestartCapability) {
  Seen s;
  ASSERT_TRUE(s.session.feed(peer_up(kReflector, from_hex(kFrr84OpenSent), from_hex(kFrr84OpenReceived))));
  ASSERT_EQ(s.events, std::vector<std::string>{"up 10.0.0.2"});
  const PeerUp& up = s.last_up;
  EXPECT_EQ(up.capabilities_malformed, nullptr);
  EXPECT_EQ(up.sent_bgp_id, 0xc6120001u);
  EXPECT_EQ(up.received_bgp_id, 0xc6120002u);
  EXPECT_TRUE(up.sent_gr.present);
  EXPECT_TRUE(up.sent_gr.ipv4_unicast);
  EXPECT_TRUE(up.sent_gr.ipv4_unicast_forwarding) << "preserve-fw-state";
  EXPECT_TRUE(up.received_gr.present);
  EXPECT_TRUE(up.received_gr.ipv4_unicast);
  EXPECT_FALSE(up.received_gr.ipv4_unicast_forwarding);
  EXPECT_EQ(up.received_gr.restart_time_s, 120);
  EXPECT_TRUE(up.received_gr.notification) << "FRR 8.4 sends the N bit";
  EXPECT_TRUE(up.received_gr.restart_state) << "the R bit of a bgpd that has just started";

  Seen helper;
  ASSERT_TRUE(helper.session.feed(peer_up(kReflector, from_hex(kFrr84OpenSent), from_hex(kFrr84OpenReceivedHelperOnly))));
  EXPECT_TRUE(helper.last_up.received_gr.present);
  EXPECT_FALSE(helper.last_up.received_gr.ipv4_unicast) << "helper mode names no AFI/SAFI";

  // Built: several tuples (the IPv4 unicast one found among others), no capability at all.
  Seen built;
  ASSERT_TRUE(built.session.feed(peer_up(
      kReflector, open(0x0a000001, {usual_capabilities()}),
      open(kReflector, {usual_capabilities(), graceful_restart(300, {GrTuple{2, 1, true}, GrTuple{1, 1, true}})}))));
  EXPECT_FALSE(built.last_up.sent_gr.present);
  EXPECT_TRUE(built.last_up.received_gr.ipv4_unicast);
  EXPECT_TRUE(built.last_up.received_gr.ipv4_unicast_forwarding);
  EXPECT_EQ(built.last_up.received_gr.restart_time_s, 300);
  EXPECT_FALSE(built.last_up.received_gr.notification);
}

TEST(BmpParser, CapabilitiesThatDoNotAddUpLeaveThePeerUpWithoutGracefulRestart) {
  Buf bad_gr = capability(64, {0x00, 0x78, 0x00, 0x01, 0x01});  // 5 bytes: not 2 + 4n
  Buf cut = open(kReflector, {graceful_restart(120)});
  cut[19 + 9] += 3;  // parameters length past the OPEN's end
  for (const Buf& received : {open(kReflector, {bad_gr}), cut}) {
    Buf fixed = received;
    fixed[16] = static_cast<std::uint8_t>(fixed.size() >> 8);
    fixed[17] = static_cast<std::uint8_t>(fixed.size());
    Seen s;
    ASSERT_TRUE(s.session.feed(peer_up(kReflector, open(0x0a000001, {graceful_restart(120)}), fixed)));
    EXPECT_EQ(s.events, std::vector<std::string>{"up 10.0.0.2"}) << "the peer is up all the same";
    EXPECT_FALSE(s.last_up.received_gr.present);
    EXPECT_TRUE(s.last_up.sent_gr.present);
    EXPECT_NE(s.last_up.capabilities_malformed, nullptr);
  }
}

TEST(BmpParser, PeerDownReasonWithItsNotificationOrFsmEvent) {
  Seen s;
  Buf stream = peer_up(kReflector);
  append(stream, peer_down(kReflector, 3, notification(6, 2)));  // as FRR 8.4 sent for `neighbor shutdown`
  ASSERT_TRUE(s.session.feed(stream));
  EXPECT_EQ(s.last_down.reason, 3);
  EXPECT_EQ(s.last_down.notify_code, std::optional<std::uint8_t>{6});
  EXPECT_EQ(s.last_down.notify_subcode, std::optional<std::uint8_t>{2});

  stream = peer_up(kReflector);
  append(stream, peer_down(kReflector, 2, fsm_event(0)));  // FRR 8.4's every local close
  ASSERT_TRUE(s.session.feed(stream));
  EXPECT_EQ(s.last_down.reason, 2);
  EXPECT_EQ(s.last_down.fsm_event, std::optional<std::uint16_t>{0});
  EXPECT_FALSE(s.last_down.notify_code);

  stream = peer_up(kReflector);
  append(stream, peer_down(kReflector, 1, {0xff, 0xff}));  // a NOTIFICATION cut short: the reason stays
  ASSERT_TRUE(s.session.feed(stream));
  EXPECT_EQ(s.last_down.reason, 1);
  EXPECT_FALSE(s.last_down.notify_code);
  EXPECT_EQ(s.ignored(Ignored::malformed), 0u);
}

}  // namespace
}  // namespace vxfed::bgp::bmp
