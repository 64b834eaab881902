// The speaker's messages read back: UPDATEs through bgp/'s own UPDATE parser (the one vxfed's
// BMP station runs on every Route Monitoring message), so that what the scale bed sends is
// what vxfed reads; OPEN and the header checks through the speaker's own readers.
#include <gtest/gtest.h>

#include <map>

#include "bgp/bmp_parser.hpp"
#include "perf/federation/speaker/bgp_wire.hpp"
#include "perf/federation/speaker/speaker_config.hpp"

namespace sp = vxfed::perf::speaker;
namespace bmp = vxfed::bgp::bmp;
using vxfed::net::Ipv4Addr;
using vxfed::net::Ipv4Prefix;

namespace {

Ipv4Prefix prefix(const char* text) { return *Ipv4Prefix::parse(text); }
Ipv4Addr addr(const char* text) { return *Ipv4Addr::parse(text); }

// Splits a buffer into its messages by their header lengths.
std::vector<sp::Bytes> messages(const std::vector<std::uint8_t>& buf) {
  std::vector<sp::Bytes> out;
  std::size_t off = 0;
  while (off < buf.size()) {
    std::size_t need = 0;
    sp::WireError err;
    const auto h = sp::read_header(sp::Bytes(buf).subspan(off), need, err);
    EXPECT_TRUE(h) << "message at " << off << ": " << err.why;
    if (!h) break;
    out.push_back(sp::Bytes(buf).subspan(off, h->length));
    off += h->length;
  }
  return out;
}

// The scale bed's routes: /26 blocks, each with a VTEP of its own.
std::vector<sp::Route> blocks(std::uint32_t base, std::uint32_t vtep_base, int count, int vteps = 0) {
  std::vector<sp::Route> r;
  for (int i = 0; i < count; ++i)
    r.push_back({Ipv4Prefix::make(base + (static_cast<std::uint32_t>(i) << 6), 26),
                 Ipv4Addr{vtep_base + 256 + static_cast<std::uint32_t>(vteps ? i % vteps : i)}});
  return r;
}

struct Read {
  std::map<Ipv4Prefix, Ipv4Addr> routes;
  std::size_t updates = 0;
  bool end_of_rib = false;
};

// Every UPDATE of `buf` through bmp::parse_update; the routes it announced.
Read read_back(const std::vector<std::uint8_t>& buf, bool two_byte_as_path, std::uint32_t origin_as,
               std::uint16_t path_length) {
  Read out;
  bmp::Update u;
  for (const auto m : messages(buf)) {
    EXPECT_EQ(m[18], 2) << "not an UPDATE";
    EXPECT_LE(m.size(), sp::kMaxMessage);
    u.clear();
    bmp::Malformed bad;
    EXPECT_TRUE(bmp::parse_update(m, two_byte_as_path, u, bad)) << bad.why;
    if (u.end_of_rib) {
      out.end_of_rib = true;
      continue;
    }
    ++out.updates;
    EXPECT_TRUE(u.next_hop.has_value());
    EXPECT_EQ(u.origin_as, origin_as);
    EXPECT_EQ(u.as_path_length, path_length);
    EXPECT_FALSE(u.gbp_mark);
    for (const auto& p : u.announced) {
      EXPECT_FALSE(out.routes.contains(p)) << p.str() << " announced twice";
      out.routes[p] = *u.next_hop;
    }
  }
  return out;
}

void expect_routes(const Read& r, const std::vector<sp::Route>& want) {
  ASSERT_EQ(r.routes.size(), want.size());
  for (const auto& w : want) {
    auto it = r.routes.find(w.prefix);
    ASSERT_NE(it, r.routes.end()) << w.prefix.str() << " not announced";
    EXPECT_EQ(it->second, w.next_hop) << w.prefix.str();
  }
}

TEST(ScaleSpeakerWire, EbgpBlocksEachWithItsVtepAreOneUpdateEach) {
  const auto routes = blocks(addr("10.128.0.0").value, addr("198.19.0.0").value, 5000);
  std::vector<std::uint8_t> buf;
  EXPECT_EQ(sp::append_updates({.ibgp = false, .local_as = 65002, .four_byte_as = true}, routes, buf), 5000u);
  sp::append_end_of_rib(buf);
  const Read r = read_back(buf, false, 65002, 1);
  EXPECT_EQ(r.updates, 5000u);
  EXPECT_TRUE(r.end_of_rib);
  expect_routes(r, routes);
}

TEST(ScaleSpeakerWire, IbgpCarriesAnEmptyPathAndLocalPref) {
  const auto routes = blocks(addr("10.64.0.64").value, addr("198.18.0.0").value, 300);
  std::vector<std::uint8_t> buf;
  sp::append_updates({.ibgp = true, .local_as = 65001, .four_byte_as = true}, routes, buf);
  expect_routes(read_back(buf, false, 0, 0), routes);
  // LOCAL_PREF 100 (type 5, well-known flags) right after NEXT_HOP in the first UPDATE.
  const std::vector<std::uint8_t> local_pref = {0x40, 5, 4, 0, 0, 0, 100};
  EXPECT_NE(std::search(buf.begin(), buf.begin() + 60, local_pref.begin(), local_pref.end()), buf.begin() + 60);
}

TEST(ScaleSpeakerWire, SharedNextHopsArePackedUnderTheSizeLimit) {
  // 20,000 blocks over 3 VTEPs: ~6,667 prefixes of 5 bytes per next hop, more than one
  // 4,096-byte UPDATE each.
  const auto routes = blocks(addr("10.128.0.0").value, addr("198.19.0.0").value, 20000, 3);
  std::vector<std::uint8_t> buf;
  const std::size_t n = sp::append_updates({.ibgp = false, .local_as = 65002, .four_byte_as = true}, routes, buf);
  const Read r = read_back(buf, false, 65002, 1);
  EXPECT_EQ(r.updates, n);
  EXPECT_GT(n, 3u * 8u);
  EXPECT_LT(n, 3u * 10u);
  expect_routes(r, routes);
}

TEST(ScaleSpeakerWire, TwoOctetPathWhenThePeerHasNoFourOctetAs) {
  const auto routes = blocks(addr("10.128.0.0").value, addr("198.19.0.0").value, 10);
  std::vector<std::uint8_t> buf;
  sp::append_updates({.ibgp = false, .local_as = 65002, .four_byte_as = false}, routes, buf);
  expect_routes(read_back(buf, true, 65002, 1), routes);
  buf.clear();
  sp::append_updates({.ibgp = false, .local_as = 4200000001u, .four_byte_as = false}, routes, buf);
  expect_routes(read_back(buf, true, sp::kAsTrans, 1), routes);
}

TEST(ScaleSpeakerWire, WithdrawalReadsAsWithdrawn) {
  const std::vector<Ipv4Prefix> gone = {prefix("10.128.0.0/26"), prefix("10.128.0.64/26"), prefix("10.0.0.0/8")};
  std::vector<std::uint8_t> buf;
  sp::append_withdrawal(gone, buf);
  bmp::Update u;
  bmp::Malformed bad;
  ASSERT_TRUE(bmp::parse_update(buf, false, u, bad)) << bad.why;
  EXPECT_EQ(u.withdrawn, gone);
  EXPECT_TRUE(u.announced.empty());
}

TEST(ScaleSpeakerWire, OpenReadsBackWithItsCapabilities) {
  const auto open = sp::encode_open(
      {.local_as = 4200000001u, .hold_s = 30, .bgp_id = addr("198.18.0.12"), .route_refresh = true});
  std::size_t need = 0;
  sp::WireError err;
  ASSERT_TRUE(sp::read_header(open, need, err));
  const auto o = sp::parse_open(open, 4200000001u, err);
  ASSERT_TRUE(o) << err.why;
  EXPECT_EQ(o->version, 4);
  EXPECT_TRUE(o->four_byte_as);
  EXPECT_TRUE(o->ipv4_unicast);
  EXPECT_TRUE(o->route_refresh);
  EXPECT_EQ(o->hold_s, 30);
  EXPECT_EQ(o->bgp_id, addr("198.18.0.12").value);
  // My AS is AS_TRANS for an ASN above 65,535.
  EXPECT_EQ(open[20] << 8 | open[21], sp::kAsTrans);
}

TEST(ScaleSpeakerWire, OpenOffersNoRouteRefreshUnlessAsked) {
  const auto open = sp::encode_open({.local_as = 65002, .hold_s = 30, .bgp_id = addr("198.18.0.20")});
  sp::WireError err;
  const auto o = sp::parse_open(open, 65002, err);
  ASSERT_TRUE(o) << err.why;
  EXPECT_FALSE(o->route_refresh);
  EXPECT_TRUE(o->four_byte_as);
  EXPECT_TRUE(o->ipv4_unicast);
}

TEST(ScaleSpeakerWire, OpenFromTheWrongAsIsRefusedWithBadPeerAs) {
  const auto open = sp::encode_open({.local_as = 65001, .hold_s = 30, .bgp_id = addr("198.18.0.10")});
  sp::WireError err;
  EXPECT_FALSE(sp::parse_open(open, 65002, err));
  EXPECT_EQ(err.code, sp::ErrorCode::open);
  EXPECT_EQ(err.subcode, sp::kOpenBadPeerAs);
  EXPECT_NE(err.why.find("65001"), std::string::npos) << err.why;
}

TEST(ScaleSpeakerWire, OpenWithHoldTimeOneIsRefused) {
  auto open = sp::encode_open({.local_as = 65001, .hold_s = 1, .bgp_id = addr("198.18.0.10")});
  sp::WireError err;
  EXPECT_FALSE(sp::parse_open(open, 65001, err));
  EXPECT_EQ(err.subcode, sp::kOpenUnacceptableHold);
}

TEST(ScaleSpeakerWire, BrokenHeadersNameTheirFault) {
  auto ka = sp::encode_keepalive();
  std::size_t need = 0;
  sp::WireError err;
  ASSERT_TRUE(sp::read_header(ka, need, err));
  // Not whole yet: no error, the length it needs.
  auto open = sp::encode_open({.local_as = 65001, .hold_s = 30, .bgp_id = addr("198.18.0.10")});
  EXPECT_FALSE(sp::read_header(sp::Bytes(open).first(25), need, err));
  EXPECT_TRUE(err.why.empty());
  EXPECT_EQ(need, open.size());
  auto bad = ka;
  bad[3] = 0;
  EXPECT_FALSE(sp::read_header(bad, need, err));
  EXPECT_EQ(err.subcode, sp::kHeaderNotSynchronized);
  bad = ka;
  bad[17] = 18;
  err = {};
  EXPECT_FALSE(sp::read_header(bad, need, err));
  EXPECT_EQ(err.subcode, sp::kHeaderBadLength);
  bad = ka;
  bad[18] = 9;
  err = {};
  EXPECT_FALSE(sp::read_header(bad, need, err));
  EXPECT_EQ(err.subcode, sp::kHeaderBadType);
}

TEST(ScaleSpeakerWire, NotificationCarriesCodeAndSubcode) {
  const auto n = sp::encode_notification(sp::ErrorCode::cease, sp::kCeaseAdministrativeShutdown);
  EXPECT_EQ(n.size(), 21u);
  EXPECT_EQ(sp::describe_notification(n), "Cease (6/2)");
}

TEST(ScaleSpeakerConfig, ErrorsNameTheSessionAndField) {
  auto ok = sp::parse_config(R"({"sessions": [{"peer": "198.18.0.10", "local": "198.18.0.12", "local_as": 65001,
      "peer_as": 65001, "routes": [["10.64.0.64/26", "198.18.1.1"]]}]})");
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_TRUE((*ok)[0].ibgp());
  EXPECT_EQ((*ok)[0].hold_s, 30);
  auto bad_prefix = sp::parse_config(R"({"sessions": [{"peer": "198.18.0.10", "local": "198.18.0.12",
      "local_as": 65001, "peer_as": 65001, "routes": [["10.64.0.65/26", "198.18.1.1"]]}]})");
  ASSERT_FALSE(bad_prefix);
  EXPECT_NE(bad_prefix.error().find("sessions[0].routes[0]: prefix"), std::string::npos) << bad_prefix.error();
  auto bad_hold = sp::parse_config(R"({"sessions": [{"peer": "198.18.0.10", "local": "198.18.0.12",
      "local_as": 65001, "peer_as": 65001, "hold": 2, "routes": []}]})");
  ASSERT_FALSE(bad_hold);
  EXPECT_NE(bad_hold.error().find("sessions[0].hold"), std::string::npos) << bad_hold.error();
}

}  // namespace
