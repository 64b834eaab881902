// Unit tests of the pure parsers on byte spans (no DPDK): fields extracted, and the
// difference between a truncated packet and headers split across segments.
#include <arpa/inet.h>
#include <gtest/gtest.h>

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

TEST(Parse, DropReasonNamesAreUniqueSnakeCase) {
  std::set<std::string_view> names;
  for (std::uint32_t i = 0; i < dp::kDropReasonCount; ++i) {
    const auto n = dp::drop_reason_name(static_cast<dp::DropReason>(i));
    EXPECT_TRUE(names.insert(n).second) << n;
    for (char ch : n) EXPECT_TRUE((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_') << n;
    EXPECT_FALSE(dp::drop_reason_description(static_cast<dp::DropReason>(i)).empty());
  }
  EXPECT_EQ(dp::drop_reason_name(dp::DropReason::UnderlayNeighborUnresolved), "underlay_neighbor_unresolved");
}

}  // namespace
}  // namespace vxfed::test
