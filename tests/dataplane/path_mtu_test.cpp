// PathMtuCache (what the underlay's ICMP fragmentation-needed taught) and parse_underlay_icmp
// (which ICMP may teach it): lowering only, the floor, expiry, full neighbourhoods, and every
// check of the parser on forged messages.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "dataplane/core/icmp_parse.hpp"
#include "dataplane/core/path_mtu.hpp"
#include "tests/dataplane/frames.hpp"

namespace vxfed::test {
namespace {

namespace dp = vxfed::dataplane;

std::uint32_t be(const char* text) { return htonl(ip(text)); }

TEST(PathMtuCache, LowersOnlyWithAFloorAndExpires) {
  dp::PathMtuCache c;
  EXPECT_FALSE(c.any());
  EXPECT_EQ(c.lookup(be("198.18.0.2")), 0);
  EXPECT_FALSE(c.learn(be("198.18.0.2"), 9000, 9000)) << "the underlay's own MTU teaches nothing";
  EXPECT_TRUE(c.learn(be("198.18.0.2"), 1500, 9000));
  EXPECT_TRUE(c.any());
  EXPECT_EQ(c.lookup(be("198.18.0.2")), 1500);
  EXPECT_EQ(c.lookup(be("198.18.0.3")), 0) << "per VTEP";
  EXPECT_FALSE(c.learn(be("198.18.0.2"), 4000, 9000)) << "only lowers";
  EXPECT_EQ(c.lookup(be("198.18.0.2")), 1500);
  EXPECT_TRUE(c.learn(be("198.18.0.2"), 100, 9000));
  EXPECT_EQ(c.lookup(be("198.18.0.2")), dp::PathMtuCache::kMinMtu) << "raised to the floor";

  c.tick(dp::PathMtuCache::kLifetimeSeconds - 1);
  EXPECT_EQ(c.lookup(be("198.18.0.2")), dp::PathMtuCache::kMinMtu);
  ASSERT_EQ(c.exceptions().size(), 1u);
  EXPECT_EQ(c.exceptions()[0].expires_in_s, 1u);
  // The same answer again refreshes its lifetime.
  EXPECT_FALSE(c.learn(be("198.18.0.2"), 552, 9000));
  c.tick(dp::PathMtuCache::kLifetimeSeconds + 5);
  EXPECT_EQ(c.lookup(be("198.18.0.2")), dp::PathMtuCache::kMinMtu) << "refreshed at second 599";
  c.tick(2 * dp::PathMtuCache::kLifetimeSeconds);
  EXPECT_EQ(c.lookup(be("198.18.0.2")), 0) << "expired";
  EXPECT_FALSE(c.any());
  EXPECT_TRUE(c.exceptions().empty());
}

TEST(PathMtuCache, ManyVtepsEachKeepTheirsAndAFullCacheRefusesCleanly) {
  dp::PathMtuCache c;
  std::uint32_t learned = 0;
  for (std::uint32_t i = 0; i < 3 * dp::PathMtuCache::kSlots; ++i) {
    const std::uint32_t vtep = htonl((198u << 24) | (18u << 16) | (i + 2));
    const auto mtu = static_cast<std::uint16_t>(1000 + i % 4000);
    if (c.learn(vtep, mtu, 9000)) {
      ++learned;
      EXPECT_EQ(c.lookup(vtep), mtu);
    } else {
      EXPECT_EQ(c.lookup(vtep), 0) << "a refused VTEP keeps the underlay's MTU";
    }
  }
  EXPECT_LE(learned, dp::PathMtuCache::kSlots);
  EXPECT_GT(learned, dp::PathMtuCache::kSlots / 2) << "slots are used before refusing";
  EXPECT_EQ(c.exceptions().size(), learned);
}

// Our outer packet toward 198.18.0.2 (IPv4 + UDP to 4789), quoted by a router.
Bytes frag_needed_frame(std::uint16_t mtu, std::uint32_t quoted_src = ip("198.18.0.1"), std::uint16_t quoted_port = 4789,
                        std::uint32_t to = ip("198.18.0.1"), bool break_icmp_checksum = false, std::size_t quote_bytes = 28) {
  const Bytes ours = ipv4(quoted_src, ip("198.18.0.2"), 17, udp(50000, quoted_port, payload(1400)), Ipv4Opts{.df = true});
  Bytes icmp = {3, 4, 0, 0, 0, 0, static_cast<std::uint8_t>(mtu >> 8), static_cast<std::uint8_t>(mtu)};
  icmp.insert(icmp.end(), ours.begin(), ours.begin() + static_cast<long>(quote_bytes));
  std::uint16_t c = checksum(icmp.data(), icmp.size());
  if (break_icmp_checksum) c ^= 0x0100;
  icmp[2] = c >> 8;
  icmp[3] = c & 0xff;
  const Mac a = {2, 0, 0, 0, 0, 1}, b = {2, 0, 0, 0, 0, 2};
  return ethernet(a, b, 0x0800, ipv4(ip("198.18.0.254"), to, 1, icmp));
}

dp::UnderlayIcmp parse(const Bytes& f) {
  return dp::parse_underlay_icmp(std::span<const std::uint8_t>(f), static_cast<std::uint32_t>(f.size()), be("198.18.0.1"));
}

TEST(UnderlayIcmp, AFragNeededAboutOurOwnVxlanPacket) {
  const auto r = parse(frag_needed_frame(1500));
  ASSERT_EQ(r.kind, dp::UnderlayIcmp::Kind::FragNeeded);
  EXPECT_EQ(r.vtep_ip_be, be("198.18.0.2"));
  EXPECT_EQ(r.mtu, 1500);
}

TEST(UnderlayIcmp, EverythingElseIsIgnoredOrNotIcmp) {
  using K = dp::UnderlayIcmp::Kind;
  EXPECT_EQ(parse(frag_needed_frame(0)).kind, K::Ignored) << "next-hop MTU 0 (pre-RFC 1191)";
  EXPECT_EQ(parse(frag_needed_frame(1500, ip("198.18.0.7"))).kind, K::Ignored) << "quotes another VTEP's packet";
  EXPECT_EQ(parse(frag_needed_frame(1500, ip("198.18.0.1"), 53)).kind, K::Ignored) << "quotes no VXLAN";
  EXPECT_EQ(parse(frag_needed_frame(1500, ip("198.18.0.1"), 4789, ip("198.18.0.9"))).kind, K::Ignored)
      << "addressed to another host";
  EXPECT_EQ(parse(frag_needed_frame(1500, ip("198.18.0.1"), 4789, ip("198.18.0.1"), true)).kind, K::Ignored)
      << "ICMP checksum wrong";
  EXPECT_EQ(parse(frag_needed_frame(1500, ip("198.18.0.1"), 4789, ip("198.18.0.1"), false, 24)).kind, K::Ignored)
      << "quote shorter than the IPv4 header and 8 bytes";
  Bytes echo = frag_needed_frame(1500);
  echo[14 + 20] = 8;  // an echo request (checksum now wrong too: either way not taken)
  EXPECT_EQ(parse(echo).kind, K::Ignored);
  // Truncated anywhere: never read beyond what is there.
  const Bytes whole = frag_needed_frame(1500);
  for (std::size_t n = 0; n < whole.size(); ++n) {
    const Bytes cut(whole.begin(), whole.begin() + static_cast<long>(n));
    EXPECT_NE(parse(cut).kind, K::FragNeeded) << n;
  }
  const Mac a = {2, 0, 0, 0, 0, 1};
  EXPECT_EQ(parse(ethernet(a, a, 0x0806, arp(1, a, ip("198.18.0.2"), a, ip("198.18.0.1")))).kind, K::NotIcmp);
  EXPECT_EQ(parse(ethernet(a, a, 0x0800, ipv4(ip("198.18.0.2"), ip("198.18.0.1"), 17, udp(1, 4789, payload(20))))).kind,
            K::NotIcmp);
}

}  // namespace
}  // namespace vxfed::test
