// The GBP mark from the wire to the VTEPs that take GBP: the BMP parser reading it from
// LARGE_COMMUNITY, the BMP RIB keeping it per path (every peer's path must carry it), the route
// table keeping it per route, and GbpVteps' rule (a VTEP takes GBP when every route naming it
// carries the mark). docs/bgp.md, "The GBP mark". And the vty commands that change the mark in a
// running bgpd (gbp_mark_commands.hpp): when a running config gets the early mark and when not.
#include <gtest/gtest.h>

#include <vector>

#include "bgp/bmp_parser.hpp"
#include "bgp/bmp_rib.hpp"
#include "bgp/fpm_encoder.hpp"
#include "bgp/gbp_mark.hpp"
#include "bgp/gbp_mark_commands.hpp"
#include "bgp/gbp_vteps.hpp"
#include "bgp/route_table.hpp"
#include "tests/bgp/bmp_messages.hpp"

namespace vxfed::bgp {
namespace {

using namespace bmp::test;
using net::Ipv4Addr, net::Ipv4Prefix;

constexpr std::uint32_t kVtepA = 0xc6120005;  // 198.18.0.5
constexpr std::uint32_t kVtepB = 0xc6120006;  // 198.18.0.6

Buf large_communities(const std::vector<LargeCommunity>& cs) {
  Buf v;
  for (const auto& c : cs) {
    put32(v, c.global_admin);
    put32(v, c.local1);
    put32(v, c.local2);
  }
  return attribute(32, v, 0xc0);  // optional, transitive
}

Buf announce_with(const Buf& extra, std::uint32_t nh = kVtepA) {
  Buf attrs = attribute(1, {0});
  append(attrs, as_path({65001}));
  append(attrs, next_hop(nh));
  append(attrs, extra);
  return update({}, attrs, {{0x0af40500, 24}});
}

bool parse(const Buf& msg, bmp::Update& u, bmp::Malformed& bad) { return bmp::parse_update(msg, false, u, bad); }

TEST(GbpMark, TheTextFrrTakes) { EXPECT_EQ(gbp_mark_text(), "4200000000:34:1"); }

TEST(GbpMark, ParserFindsTheMarkAmongLargeCommunities) {
  bmp::Update u;
  bmp::Malformed bad;
  ASSERT_TRUE(parse(announce_with(large_communities({{65001, 1, 2}, kGbpMark})), u, bad)) << bad.why;
  EXPECT_TRUE(u.gbp_mark);
  ASSERT_EQ(u.announced.size(), 1u);
  // Another community, or the mark's numbers in another order: no mark.
  ASSERT_TRUE(parse(announce_with(large_communities({{4200000000u, 1, 34}, {65001, 34, 1}})), u, bad)) << bad.why;
  EXPECT_FALSE(u.gbp_mark);
  // No LARGE_COMMUNITY at all (the previous release's routes).
  ASSERT_TRUE(parse(announce_with({}), u, bad)) << bad.why;
  EXPECT_FALSE(u.gbp_mark);
  // A standard COMMUNITY (type 8) with the same low numbers is not the mark.
  Buf community;
  put32(community, (34u << 16) | 1u);
  ASSERT_TRUE(parse(announce_with(attribute(8, community, 0xc0)), u, bad)) << bad.why;
  EXPECT_FALSE(u.gbp_mark);
}

TEST(GbpMark, ParserReadsTheMarkPastTheExtendedLength) {
  // 22 communities: 264 bytes, the extended-length form; the mark last.
  std::vector<LargeCommunity> many(21, LargeCommunity{65001, 7, 7});
  many.push_back(kGbpMark);
  bmp::Update u;
  bmp::Malformed bad;
  ASSERT_TRUE(parse(announce_with(large_communities(many)), u, bad)) << bad.why;
  EXPECT_TRUE(u.gbp_mark);
}

TEST(GbpMark, LargeCommunityOfAWrongLengthIsMalformed) {
  Buf v;
  put32(v, kGbpMark.global_admin);
  put32(v, kGbpMark.local1);  // 8 bytes: not a multiple of 12
  bmp::Update u;
  bmp::Malformed bad;
  EXPECT_FALSE(parse(announce_with(attribute(32, v, 0xc0)), u, bad));
  EXPECT_STREQ(bad.why, "LARGE_COMMUNITY length is not a multiple of 12");
  EXPECT_TRUE(u.announced.empty() || !u.gbp_mark);
}

// ---- the BMP RIB: the mark per path, the prefix's mark only when every peer's path has it

struct Rib {
  std::vector<fpm::RouteMessage> messages;
  BmpRib rib{BmpRib::Handlers{[this](const fpm::RouteMessage& m) { messages.push_back(m); }, {}, {}}};
  bmp::PeerKey peer1{0, Ipv4Addr{0x0a000002}}, peer2{0, Ipv4Addr{0x0a000003}};
  Rib() {
    rib.session_started({});
    rib.peer_up(peer1);
    rib.peer_up(peer2);
  }
  void announce(const bmp::PeerKey& peer, bool mark, std::uint32_t nh = kVtepA) {
    bmp::Update u;
    u.announced.push_back(*Ipv4Prefix::parse("10.244.5.0/24"));
    u.next_hop = Ipv4Addr{nh};
    u.gbp_mark = mark;
    rib.update(peer, u);
  }
};

TEST(GbpMark, RibMarksAPrefixOnlyWhenEveryPeersPathCarriesTheMark) {
  Rib r;
  r.announce(r.peer1, true);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_TRUE(r.messages.back().gbp_mark);
  // The second reflector's path lacks it: the prefix is no longer marked (same next hop: the
  // change of the mark alone is emitted).
  r.announce(r.peer2, false);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_FALSE(r.messages.back().gbp_mark);
  EXPECT_EQ(r.messages.back().next_hop_count, 1);
  // It gains it: marked again.
  r.announce(r.peer2, true);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_TRUE(r.messages.back().gbp_mark);
  // Re-sent as is: nothing.
  r.announce(r.peer1, true);
  EXPECT_EQ(r.messages.size(), 3u);
  // Replay carries the mark.
  r.messages.clear();
  r.rib.replay();
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_TRUE(r.messages.back().gbp_mark);
}

// ---- the route table: the mark per route, handed on; a change of the mark alone is an upsert

std::vector<PeerConfig> one_peer() {
  PeerConfig p;
  p.address = Ipv4Addr{0x0a000002};
  p.remote_asn = 65002;
  p.vni = 1500;
  p.accept.push_back(PrefixMatch{*Ipv4Prefix::parse("10.244.0.0/16"), 0, 32});
  return {p};
}

TEST(GbpMark, RouteTableKeepsTheMarkPerRouteAndUpsertsWhenItChanges) {
  RouteTable table(one_peer(), {});
  auto msg = fpm::make_bgp_route(*Ipv4Prefix::parse("10.244.5.0/24"), {kVtepA}, false);
  msg.gbp_mark = true;
  table.apply(msg);
  auto u = table.take_pending();
  ASSERT_EQ(u.upserts.size(), 1u);
  EXPECT_TRUE(u.upserts[0].gbp_mark);
  table.apply(msg);  // the same again: nothing
  EXPECT_FALSE(table.has_pending());
  msg.gbp_mark = false;
  table.apply(msg);
  u = table.take_pending();
  ASSERT_EQ(u.upserts.size(), 1u);
  EXPECT_FALSE(u.upserts[0].gbp_mark);
  EXPECT_TRUE(u.removals.empty());
  // FPM's messages never carry it.
  auto fpm_msg = fpm::make_bgp_route(*Ipv4Prefix::parse("10.244.6.0/24"), {kVtepB}, false);
  table.apply(fpm_msg);
  EXPECT_FALSE(table.take_pending().upserts.at(0).gbp_mark);
  EXPECT_FALSE(table.snapshot().at(0).gbp_mark);
}

// ---- GbpVteps: every route naming the VTEP must carry the mark

RemoteRoute route(const char* prefix, std::initializer_list<std::uint32_t> vteps, bool mark) {
  RemoteRoute r;
  r.prefix = *Ipv4Prefix::parse(prefix);
  r.vni = 1500;
  for (auto v : vteps) r.vteps.push_back(Ipv4Addr{v});
  r.gbp_mark = mark;
  return r;
}

TEST(GbpVtepsRule, AVtepTakesGbpWhenEveryRouteNamingItCarriesTheMark) {
  GbpVteps g;
  const auto a1 = route("10.244.5.0/24", {kVtepA}, true);
  const auto a2 = route("10.244.6.0/24", {kVtepA}, true);
  const auto a2_plain = route("10.244.6.0/24", {kVtepA}, false);
  g.route_changed(nullptr, &a1);
  auto c = g.take_changes();
  ASSERT_EQ(c.now_gbp.size(), 1u);
  EXPECT_EQ(c.now_gbp[0].value, kVtepA);
  EXPECT_TRUE(c.no_longer.empty());
  g.route_changed(nullptr, &a2);
  EXPECT_TRUE(g.take_changes().empty());  // still GBP: nothing new
  // One route naming it without the mark: plain VXLAN.
  g.route_changed(&a2, &a2_plain);
  EXPECT_FALSE(g.takes_gbp(Ipv4Addr{kVtepA}));
  c = g.take_changes();
  ASSERT_EQ(c.no_longer.size(), 1u);
  EXPECT_EQ(c.no_longer[0].value, kVtepA);
  // That route goes: the rest is marked, GBP again.
  g.route_changed(&a2_plain, nullptr);
  EXPECT_TRUE(g.takes_gbp(Ipv4Addr{kVtepA}));
  EXPECT_EQ(g.take_changes().now_gbp.size(), 1u);
  // The last route goes: cleared.
  g.route_changed(&a1, nullptr);
  c = g.take_changes();
  EXPECT_EQ(c.no_longer.size(), 1u);
  EXPECT_TRUE(g.gbp_vteps().empty());
  EXPECT_EQ(g.size(), 0u);
  // Gone again with nothing taken in between: no change to report.
  EXPECT_TRUE(g.take_changes().empty());
}

TEST(GbpVtepsRule, EcmpRouteCountsForEachVtepAndFlapsBetweenTakesAreNotReported) {
  GbpVteps g;
  const auto ecmp = route("10.244.5.0/24", {kVtepA, kVtepB}, true);
  const auto b_plain = route("10.244.7.0/24", {kVtepB}, false);
  g.route_changed(nullptr, &ecmp);
  g.route_changed(nullptr, &b_plain);
  auto c = g.take_changes();
  ASSERT_EQ(c.now_gbp.size(), 1u);
  EXPECT_EQ(c.now_gbp[0].value, kVtepA);
  EXPECT_EQ(g.gbp_vteps(), std::vector<Ipv4Addr>{Ipv4Addr{kVtepA}});
  // A's only route goes and comes back between two takes: nothing to tell the consumer.
  g.route_changed(&ecmp, nullptr);
  g.route_changed(nullptr, &ecmp);
  EXPECT_TRUE(g.take_changes().empty());
  // clear_routes: every taken VTEP is reported to clear.
  g.clear_routes();
  c = g.take_changes();
  EXPECT_EQ(c.no_longer, std::vector<Ipv4Addr>{Ipv4Addr{kVtepA}});
  EXPECT_TRUE(g.gbp_vteps().empty());
}


// The mark changed in place: the route-map entry's one line, then our routes sent again to the
// peers of the instance bgpd runs (the view with the BMP feed, the default instance while a
// node moves from FPM), without asking for theirs.
TEST(GbpMarkCommands, SetInTheEntryThenSentAgainToTheRunningInstance) {
  BgpConfig c;
  c.feed = Feed::kBmp;
  EXPECT_EQ(gbp_mark_commands(c, true),
            (std::vector<std::string>{"enable", "configure terminal", "route-map vxfed-out permit 10",
                                      "set large-community 4200000000:34:1", "end",
                                      "clear bgp view vxfed ipv4 unicast * soft out"}));
  EXPECT_EQ(gbp_mark_commands(c, false)[3], "no set large-community");
  c.bmp_in_default_instance = true;
  EXPECT_EQ(send_routes_again_command(c), "clear bgp ipv4 unicast * soft out");
  c.bmp_in_default_instance = false;
  c.feed = Feed::kFpm;
  EXPECT_EQ(gbp_mark_commands(c, true).back(), "clear bgp ipv4 unicast * soft out");
}

constexpr const char* kRunningWithoutMark =
    "frr version 8.4.4\n"
    "!\n"
    "ip prefix-list vxfed-out seq 5 permit 10.245.0.0/24\n"
    "!\n"
    "route-map vxfed-out permit 10\n"
    " match ip address prefix-list vxfed-out\n"
    " set ip next-hop 198.18.0.21\n"
    "exit\n"
    "!\n"
    "route-map vxfed-in-198.18.0.2 permit 10\n"
    " set large-community 4200000000:34:1\n"  // another entry's: not ours
    "exit\n"
    "!\n"
    "router bgp 65001\n"
    " neighbor 198.18.0.2 remote-as 65001\n"
    "exit\n";

TEST(GbpMarkCommands, EarlyMarkOnARunningBgpdThatHoldsOurEntryWithoutIt) {
  const auto commands = early_gbp_mark_commands(kRunningWithoutMark);
  ASSERT_EQ(commands.size(), 6u);
  EXPECT_EQ(commands[2], "route-map vxfed-out permit 10");
  EXPECT_EQ(commands[3], "set large-community 4200000000:34:1");
  EXPECT_EQ(commands[5], "clear bgp ipv4 unicast * soft out");  // it runs the default instance
  std::string view = kRunningWithoutMark;
  view.replace(view.find("router bgp 65001"), 16, "router bgp 65001 view vxfed");
  EXPECT_EQ(early_gbp_mark_commands(view).back(), "clear bgp view vxfed ipv4 unicast * soft out");
}

TEST(GbpMarkCommands, NoEarlyMarkWhereItIsAlreadyOrWhereOurEntryOrBgpIsMissing) {
  std::string marked = kRunningWithoutMark;
  marked.insert(marked.find(" set ip next-hop"), " set large-community 4200000000:34:1\n");
  EXPECT_TRUE(early_gbp_mark_commands(marked).empty());  // an FRR that loaded our frr.conf
  std::string no_entry = kRunningWithoutMark;
  no_entry.replace(no_entry.find("route-map vxfed-out permit 10"), 29, "route-map vxfed-out permit 20");
  EXPECT_TRUE(early_gbp_mark_commands(no_entry).empty());  // entering it would create an entry without match
  std::string bare = kRunningWithoutMark;
  bare.erase(bare.find("router bgp"));
  EXPECT_TRUE(early_gbp_mark_commands(bare).empty());
  EXPECT_TRUE(early_gbp_mark_commands("").empty());
}

}  // namespace
}  // namespace vxfed::bgp
