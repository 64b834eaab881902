// Unit tests of the pure parsers on byte spans (no DPDK): fields extracted, and the
// difference between a truncated packet and headers split across segments.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <optional>
#include <set>

#include "dataplane/core/parse.hpp"
#include "tests/dataplane/frames.hpp"

namespace vxfed::test {
namespace {

namespace dp = vxfed::dataplane;
const Mac kM = {0x02, 0, 0, 0, 0, 1};

Bytes good_vxlan(std::uint32_t vni = 4242) {
  const Bytes inner = ethernet(kM, kM, 0x0800, ipv4(ip("10.245.0.1"), ip("10.244.1.10"), 17, udp(1, 2, payload(10))));
  return vxlan_frame(kM, kM, ip("198.18.0.2"), ip("198.18.0.1"), 50000, vni, inner);
}
dp::UplinkParseOptions opts() { return dp::UplinkParseOptions{htonl(ip("198.18.0.1")), false}; }

TEST(Parse, UplinkVxlanFields) {
  const Bytes b = good_vxlan();
  const auto f = dp::parse_uplink_frame(dp::ByteSpan(b), static_cast<std::uint32_t>(b.size()), opts());
  ASSERT_EQ(f.kind, dp::FrameKind::Vxlan) << dp::drop_reason_name(f.drop);
  EXPECT_EQ(f.vni, 4242u);
  EXPECT_EQ(ntohl(f.outer_src_ip_be), ip("198.18.0.2"));
  EXPECT_EQ(ntohl(f.inner_dst_ip_be), ip("10.244.1.10"));
  EXPECT_EQ(f.inner_len, b.size() - 50);
  EXPECT_EQ(f.inner_ip_total_len, 20 + 8 + 10);
}

TEST(Parse, SplitHeadersAreNotTruncation) {
  const Bytes b = good_vxlan();
  for (std::size_t first = 0; first < 84; ++first) {
    const auto f = dp::parse_uplink_frame(dp::ByteSpan(b.data(), first), static_cast<std::uint32_t>(b.size()), opts());
    ASSERT_EQ(f.kind, dp::FrameKind::Drop) << first;
    EXPECT_EQ(f.drop, dp::DropReason::HeadersSplit) << "first segment of " << first << " bytes";
  }
  const auto f = dp::parse_uplink_frame(dp::ByteSpan(b.data(), 84), static_cast<std::uint32_t>(b.size()), opts());
  EXPECT_EQ(f.kind, dp::FrameKind::Vxlan);
}

TEST(Parse, ChecksumVerifiedByNicIsTrusted) {
  Bytes b = good_vxlan();
  b[24] ^= 0xff;  // checksum byte
  auto o = opts();
  EXPECT_EQ(dp::parse_uplink_frame(dp::ByteSpan(b), static_cast<std::uint32_t>(b.size()), o).drop, dp::DropReason::BadIpChecksum);
  o.outer_ip_checksum_verified = true;
  EXPECT_EQ(dp::parse_uplink_frame(dp::ByteSpan(b), static_cast<std::uint32_t>(b.size()), o).kind, dp::FrameKind::Vxlan);
}

TEST(Parse, PodFramePortsOnlyForWholePackets) {
  const Bytes whole = ethernet(kM, kM, 0x0800, ipv4(ip("10.244.1.10"), ip("10.245.0.1"), 6, udp(1111, 2222, payload(20)), Ipv4Opts{.tos = 0xb8, .df = true}));
  auto f = dp::parse_pod_frame(dp::ByteSpan(whole), static_cast<std::uint32_t>(whole.size()));
  ASSERT_EQ(f.kind, dp::FrameKind::Ipv4);
  EXPECT_EQ(ntohs(f.src_port_be), 1111);
  EXPECT_EQ(ntohs(f.dst_port_be), 2222);
  EXPECT_EQ(f.tos, 0xb8);
  EXPECT_TRUE(f.dont_fragment);
  EXPECT_EQ(f.protocol, 6);
  const Bytes frag = ethernet(kM, kM, 0x0800, ipv4(ip("10.244.1.10"), ip("10.245.0.1"), 6, udp(1111, 2222, payload(20)), Ipv4Opts{.mf = true}));
  f = dp::parse_pod_frame(dp::ByteSpan(frag), static_cast<std::uint32_t>(frag.size()));
  ASSERT_EQ(f.kind, dp::FrameKind::Ipv4);
  EXPECT_EQ(f.src_port_be, 0);
  EXPECT_EQ(f.dst_port_be, 0);
}

TEST(Parse, InconsistentLengthsRefused) {
  const Bytes b = good_vxlan();
  // A caller claiming the packet is shorter than its first segment is refused, not trusted.
  EXPECT_EQ(dp::parse_uplink_frame(dp::ByteSpan(b), 10, opts()).drop, dp::DropReason::Truncated);
  EXPECT_EQ(dp::parse_pod_frame(dp::ByteSpan(b), 10).drop, dp::DropReason::Truncated);
}

// The four bytes in front of the VNI (offset 42 of the frame: outside the outer IPv4 checksum;
// the outer UDP checksum is 0) set to a VXLAN-GBP header or to anything else.
Bytes with_vxlan_front(Bytes b, std::uint8_t flags, std::uint8_t gbp_flags, std::uint16_t group) {
  b.at(42) = flags;
  b.at(43) = gbp_flags;
  b.at(44) = static_cast<std::uint8_t>(group >> 8);
  b.at(45) = static_cast<std::uint8_t>(group & 0xff);
  return b;
}

struct GbpCase {
  const char* what;
  std::uint8_t flags, gbp_flags;
  std::uint16_t group;
  // Expected: a drop reason, or a VXLAN verdict with these Group Policy fields.
  std::optional<dp::DropReason> drop;
  bool group_policy = false, applied = false;
  std::uint16_t group_out = 0;
};

TEST(Parse, VxlanGroupPolicyHeaders) {
  using R = dp::DropReason;
  const GbpCase cases[] = {
      {"G|I, group 0x1234", 0x88, 0x00, 0x1234, std::nullopt, true, false, 0x1234},
      {"G|I with A, group 65535", 0x88, 0x08, 0xffff, std::nullopt, true, true, 0xffff},
      {"G|I with D", 0x88, 0x40, 7, std::nullopt, true, false, 7},
      {"G|I with D and A, group 0 (unknown)", 0x88, 0x48, 0, std::nullopt, true, true, 0},
      {"plain VXLAN: the three bytes are reserved and ignored", 0x08, 0xff, 0xabcd, std::nullopt, false, false, 0},
      {"G without I", 0x80, 0x00, 5, R::BadVxlanFlags},
      {"G|I and another flag (0x04)", 0x8c, 0x00, 5, R::BadVxlanFlags},
      {"G|I and 0x40", 0xc8, 0x00, 5, R::BadVxlanFlags},
      {"G|I and 0x10", 0x98, 0x00, 5, R::BadVxlanFlags},
      {"no flag", 0x00, 0x00, 0, R::BadVxlanFlags},
      {"GBP reserved bit 0x80", 0x88, 0x80, 5, R::BadVxlanGbpBits},
      {"GBP reserved bit 0x20", 0x88, 0x20, 5, R::BadVxlanGbpBits},
      {"GBP reserved bit 0x10", 0x88, 0x10, 5, R::BadVxlanGbpBits},
      {"GBP reserved bit 0x04", 0x88, 0x04, 5, R::BadVxlanGbpBits},
      {"GBP reserved bit 0x02", 0x88, 0x02, 5, R::BadVxlanGbpBits},
      {"GBP reserved bit 0x01 with A", 0x88, 0x09, 5, R::BadVxlanGbpBits},
  };
  const Bytes plain = good_vxlan(777);
  const auto base = dp::parse_uplink_frame(dp::ByteSpan(plain), static_cast<std::uint32_t>(plain.size()), opts());
  ASSERT_EQ(base.kind, dp::FrameKind::Vxlan);
  for (const GbpCase& k : cases) {
    SCOPED_TRACE(k.what);
    const Bytes b = with_vxlan_front(plain, k.flags, k.gbp_flags, k.group);
    const auto len = static_cast<std::uint32_t>(b.size());
    const auto f = dp::parse_uplink_frame(dp::ByteSpan(b), len, opts());
    const auto r = dp::parse_uplink_frame_full(dp::ByteSpan(b), len, opts());
    if (k.drop) {
      ASSERT_EQ(f.kind, dp::FrameKind::Drop);
      EXPECT_EQ(dp::drop_reason_name(f.drop), dp::drop_reason_name(*k.drop));
      EXPECT_EQ(r.drop, *k.drop);
      continue;
    }
    ASSERT_EQ(f.kind, dp::FrameKind::Vxlan) << dp::drop_reason_name(f.drop);
    EXPECT_EQ(f.group_policy, k.group_policy);
    EXPECT_EQ(f.group_policy_applied, k.applied);
    EXPECT_EQ(f.group_policy_id, k.group_out);
    // Everything else is what plain VXLAN gives: decapsulation proceeds the same way.
    EXPECT_EQ(f.vni, 777u);
    EXPECT_EQ(f.outer_src_ip_be, base.outer_src_ip_be);
    EXPECT_EQ(f.inner_len, base.inner_len);
    EXPECT_EQ(f.inner_dst_ip_be, base.inner_dst_ip_be);
    EXPECT_EQ(f.inner_ip_total_len, base.inner_ip_total_len);
    EXPECT_EQ(r.group_policy_id, f.group_policy_id);
  }
}

TEST(Parse, GroupPolicyTakesTheReferenceParser) {
  // The fast path's flags test is for 0x08 alone, so that plain VXLAN pays nothing for GBP:
  // a GBP packet is the reference parser's, which then accepts it.
  const Bytes b = with_vxlan_front(good_vxlan(), 0x88, 0x08, 0x0102);
  dp::UplinkFrame f;
  EXPECT_FALSE(dp::try_parse_uplink_fast(dp::ByteSpan(b), static_cast<std::uint32_t>(b.size()), opts(), &f));
  // Headers split across segments are still told apart from truncation.
  for (std::size_t first = 0; first < 84; ++first) {
    const auto s = dp::parse_uplink_frame(dp::ByteSpan(b.data(), first), static_cast<std::uint32_t>(b.size()), opts());
    ASSERT_EQ(s.kind, dp::FrameKind::Drop) << first;
    EXPECT_EQ(s.drop, dp::DropReason::HeadersSplit) << first;
  }
  const auto whole = dp::parse_uplink_frame(dp::ByteSpan(b.data(), 84), static_cast<std::uint32_t>(b.size()), opts());
  ASSERT_EQ(whole.kind, dp::FrameKind::Vxlan);
  EXPECT_EQ(whole.group_policy_id, 0x0102);
  EXPECT_TRUE(whole.group_policy_applied);
}

TEST(Parse, DropReasonNamesAreUniqueSnakeCase) {
  std::set<std::string_view> names;
  for (std::uint32_t i = 0; i < dp::kDropReasonCount; ++i) {
    const auto n = dp::drop_reason_name(static_cast<dp::DropReason>(i));
    EXPECT_TRUE(names.insert(n).second) << n;
    for (char ch : n) EXPECT_TRUE((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_') << n;
    EXPECT_FALSE(dp::drop_reason_description(static_cast<dp::DropReason>(i)).empty());
  }
  EXPECT_EQ(dp::drop_reason_name(dp::DropReason::UnderlayNeighborUnresolved), "underlay_neighbor_unresolved");
  EXPECT_EQ(dp::drop_reason_name(dp::DropReason::BadVxlanFlags), "bad_vxlan_flags");
  EXPECT_EQ(dp::drop_reason_name(dp::DropReason::BadVxlanGbpBits), "bad_vxlan_gbp_bits");
}

}  // namespace
}  // namespace vxfed::test
