// FPM parser: table-driven cases over raw bytes (docs/conventions.md: parsers). Each case is
// {name, bytes, expected summary}; the summary spells out what the parser made of the bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "bgp/fpm_encoder.hpp"
#include "bgp/fpm_parser.hpp"

namespace {

using namespace vxfed::bgp;
using vxfed::net::Ipv4Addr, vxfed::net::Ipv4Prefix;
using namespace vxfed::bgp::fpm;
using Buf = std::vector<std::uint8_t>;

std::uint32_t ip(const char* s) { return Ipv4Addr::parse(s)->value; }
Ipv4Prefix pfx(const char* s) { return *Ipv4Prefix::parse(s); }

// What the parser made of a buffer, as one line.
std::string summarize(const Buf& bytes) {
  Frame f;
  auto st = parse_frame(Bytes(bytes), f);
  if (st != FrameStatus::kOk) return std::string("frame:") + to_string(st);
  if (f.length != bytes.size()) return "frame:length_mismatch_in_test";
  if (!netlink_framing_ok(f.payload)) return "netlink:malformed";
  std::string out;
  NetlinkIterator it(f.payload);
  Bytes msg;
  std::uint16_t type;
  while (it.next(msg, type)) {
    RouteMessage r;
    const char* why = "";
    auto rs = parse_route(msg, r, &why);
    if (!out.empty()) out += "; ";
    if (rs == RouteStatus::kMalformed) {
      out += std::string("malformed(") + why + ")";
      continue;
    }
    if (rs != RouteStatus::kRoute) {
      out += to_string(rs);
      continue;
    }
    out += std::string(r.is_delete ? "DEL " : "NEW ") + r.prefix.str() + " proto " +
           std::to_string(r.protocol) + " table " + std::to_string(r.table) + " nh[";
    for (int i = 0; i < r.next_hop_count; ++i) {
      out += (i ? "," : "") + Ipv4Addr{r.next_hops[i].gateway}.str();
      if (r.next_hops[i].weight != 1) out += "w" + std::to_string(r.next_hops[i].weight);
    }
    out += "]";
    if (r.multipath) out += " mp";
    if (r.unknown_attributes) out += " unknown=" + std::to_string(r.unknown_attributes);
  }
  return out;
}

Buf nl(std::initializer_list<RouteMessage> routes) {
  Buf out;
  for (const auto& r : routes) append_route_message(out, r);
  return out;
}
Buf frame(const Buf& netlink) {
  Buf out;
  append_frame(out, netlink);
  return out;
}
RouteMessage bgp(const char* prefix, std::initializer_list<std::uint32_t> gws, bool del = false) {
  return make_bgp_route(pfx(prefix), gws, del);
}
// Mutators for the raw cases: netlink length lives at payload offset 0 (host order).
Buf with(Buf b, const std::function<void(Buf&)>& f) {
  f(b);
  return b;
}
void set_nl_len(Buf& b, std::size_t frame_off, std::uint32_t len) { std::memcpy(&b[4 + frame_off], &len, 4); }
void append_attr(Buf& netlink, std::uint16_t type, std::initializer_list<std::uint8_t> payload) {
  std::uint16_t len = static_cast<std::uint16_t>(4 + payload.size());
  std::uint8_t h[4];
  std::memcpy(h, &len, 2);
  std::memcpy(h + 2, &type, 2);
  netlink.insert(netlink.end(), h, h + 4);
  netlink.insert(netlink.end(), payload);
  while (netlink.size() % 4) netlink.push_back(0);
  std::uint32_t total = static_cast<std::uint32_t>(netlink.size());
  std::memcpy(&netlink[0], &total, 4);  // single message: patch nlmsg_len
}

struct Case {
  const char* name;
  Buf bytes;
  std::string expected;
};

TEST(FpmParser, Cases) {
  const Buf one = nl({bgp("10.245.0.0/16", {ip("198.18.0.12")})});
  RouteMessage mp0 = bgp("10.245.0.0/16", {});
  mp0.multipath = true;
  RouteMessage mp2 = bgp("10.245.0.0/16", {ip("198.18.0.12"), ip("198.18.0.13")});
  mp2.next_hops[1].weight = 3;
  RouteMessage v6 = bgp("10.245.0.0/16", {ip("198.18.0.12")});
  v6.family = 10;
  RouteMessage stat = bgp("10.245.0.0/16", {ip("198.18.0.12")});
  stat.protocol = 196;  // RTPROT_STATIC as zebra reports it
  RouteMessage other_table = bgp("10.245.0.0/16", {ip("198.18.0.12")});
  other_table.table = 1000;
  RouteMessage dflt = bgp("0.0.0.0/0", {ip("198.18.0.1")});

  Buf unknown_attr = one;
  append_attr(unknown_attr, 200, {1, 2, 3});      // unknown type, odd length, padded
  append_attr(unknown_attr, 7, {10, 0, 0, 1});    // RTA_PREFSRC: known to Linux, not to us
  Buf short_attr = one;
  short_attr.insert(short_attr.end(), {2, 0, 1, 0});  // rta_len 2 < 4
  { std::uint32_t t = static_cast<std::uint32_t>(short_attr.size()); std::memcpy(&short_attr[0], &t, 4); }
  Buf long_attr = one;
  long_attr.insert(long_attr.end(), {40, 0, 1, 0});  // rta_len 40 beyond the message
  { std::uint32_t t = static_cast<std::uint32_t>(long_attr.size()); std::memcpy(&long_attr[0], &t, 4); }
  Buf bad_dst = nl({bgp("10.245.0.0/16", {})});
  append_attr(bad_dst, 1, {10, 245});  // RTA_DST of 2 bytes
  Buf newlink(16, 0);
  { std::uint32_t l = 16; std::uint16_t t = 16; std::memcpy(&newlink[0], &l, 4); std::memcpy(&newlink[4], &t, 2); }
  Buf short_rtmsg(20, 0);
  { std::uint32_t l = 20; std::uint16_t t = kRtmNewRoute; std::memcpy(&short_rtmsg[0], &l, 4); std::memcpy(&short_rtmsg[4], &t, 2); }
  Buf big_dst_len = one;
  big_dst_len[17] = 33;

  const std::vector<Case> cases = {
      {"empty buffer", {}, "frame:need_more"},
      {"truncated header", {1, 1, 0}, "frame:need_more"},
      {"length below 4", {1, 1, 0, 3, 0, 0}, "frame:bad_length"},
      {"length zero", {1, 1, 0, 0}, "frame:bad_length"},
      {"length beyond buffer", with(frame(one), [](Buf& b) { b.resize(b.size() - 1); }), "frame:need_more"},
      {"bad version", with(frame(one), [](Buf& b) { b[0] = 2; }), "frame:bad_version"},
      {"protobuf type", with(frame(one), [](Buf& b) { b[1] = 2; }), "frame:bad_type"},
      {"header only, empty payload", {1, 1, 0, 4}, "netlink:malformed"},
      {"one route", frame(one), "NEW 10.245.0.0/16 proto 186 table 254 nh[198.18.0.12]"},
      {"netlink length below header", with(frame(one), [](Buf& b) { set_nl_len(b, 0, 8); }), "netlink:malformed"},
      {"netlink length beyond frame", with(frame(one), [](Buf& b) { set_nl_len(b, 0, 4096); }), "netlink:malformed"},
      {"netlink length shorter than content, rest not a message",
       with(frame(one), [](Buf& b) { set_nl_len(b, 0, 28); }), "netlink:malformed"},
      {"trailing bytes after last message", with(frame(one), [](Buf& b) {
         b.insert(b.end(), {0, 0, 0, 0, 0, 0, 0, 0});
         b[3] = static_cast<std::uint8_t>(b.size());
       }), "netlink:malformed"},
      {"unknown attributes ignored", frame(unknown_attr),
       "NEW 10.245.0.0/16 proto 186 table 254 nh[198.18.0.12] unknown=2"},
      {"attribute length below 4", frame(short_attr), "malformed(attribute length below 4)"},
      {"attribute beyond message", frame(long_attr), "malformed(attribute length beyond its message)"},
      {"RTA_DST wrong size", frame(bad_dst), "malformed(RTA_DST is not 4 bytes)"},
      {"prefix length 33", frame(big_dst_len), "malformed(prefix length above 32)"},
      {"rtmsg truncated", frame(short_rtmsg), "malformed(rtmsg truncated)"},
      {"multipath zero next hops", frame(nl({mp0})), "NEW 10.245.0.0/16 proto 186 table 254 nh[] mp"},
      {"multipath two next hops, weight", frame(nl({mp2})),
       "NEW 10.245.0.0/16 proto 186 table 254 nh[198.18.0.12,198.18.0.13w3] mp"},
      {"DEL + NEW in one frame",
       frame(nl({bgp("10.245.0.0/16", {ip("198.18.0.12")}, true), bgp("10.245.0.0/16", {ip("198.18.0.13")})})),
       "DEL 10.245.0.0/16 proto 186 table 254 nh[198.18.0.12]; NEW 10.245.0.0/16 proto 186 table 254 nh[198.18.0.13]"},
      {"ipv6 skipped", frame(nl({v6})), "not_ipv4"},
      {"static protocol reported", frame(nl({stat})), "NEW 10.245.0.0/16 proto 196 table 254 nh[198.18.0.12]"},
      {"RTA_TABLE above 255", frame(nl({other_table})), "NEW 10.245.0.0/16 proto 186 table 1000 nh[198.18.0.12]"},
      {"default route without RTA_DST", frame(nl({dflt})), "NEW 0.0.0.0/0 proto 186 table 254 nh[198.18.0.1]"},
      {"RTM_NEWLINK skipped", frame(newlink), "not_route"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(summarize(c.bytes), c.expected) << "case: " << c.name;
  }
}

TEST(FpmParser, FramesSplitAnywhereInAStream) {
  Buf stream;
  for (int i = 0; i < 3; ++i) {
    Buf f = frame(nl({make_bgp_route(Ipv4Prefix::make(0x0af50000u + (i << 8), 24), {ip("198.18.0.12")})}));
    stream.insert(stream.end(), f.begin(), f.end());
  }
  // Feed every prefix of the stream: only whole frames are ever reported.
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    Bytes rest(stream.data(), cut);
    int frames = 0;
    Frame f;
    while (parse_frame(rest, f) == FrameStatus::kOk) {
      ++frames;
      rest = rest.subspan(f.length);
    }
    EXPECT_EQ(frames, static_cast<int>(cut / (stream.size() / 3))) << "cut at " << cut;
  }
}

TEST(FpmParser, MoreNextHopsThanWeKeepAreFlagged) {
  RouteMessage r = bgp("10.245.0.0/16", {});
  r.multipath = true;
  Buf netlink;
  append_route_message(netlink, r);
  // Build 40 rtnexthops by hand: the encoder is capped at kMaxNextHops.
  Buf mp;
  for (int i = 0; i < 40; ++i) {
    std::uint8_t nh[16] = {16, 0, 0, 0, 2, 0, 0, 0, 8, 0, 5, 0, 198, 18, 1, static_cast<std::uint8_t>(i)};
    mp.insert(mp.end(), nh, nh + 16);
  }
  // Replace the empty RTA_MULTIPATH (last 4 bytes) with the filled one.
  netlink.resize(netlink.size() - 4);
  std::uint16_t len = static_cast<std::uint16_t>(4 + mp.size()), type = 9;
  std::uint8_t h[4];
  std::memcpy(h, &len, 2);
  std::memcpy(h + 2, &type, 2);
  netlink.insert(netlink.end(), h, h + 4);
  netlink.insert(netlink.end(), mp.begin(), mp.end());
  std::uint32_t total = static_cast<std::uint32_t>(netlink.size());
  std::memcpy(&netlink[0], &total, 4);
  RouteMessage out;
  ASSERT_EQ(parse_route(Bytes(netlink), out), RouteStatus::kRoute);
  EXPECT_EQ(out.next_hop_count, kMaxNextHops);
  EXPECT_TRUE(out.next_hops_truncated);
  EXPECT_EQ(Ipv4Addr{out.next_hops[31].gateway}.str(), "198.18.1.31");
}

}  // namespace
