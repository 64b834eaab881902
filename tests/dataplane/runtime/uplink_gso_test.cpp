// The uplink's UDP super-packets (--uplink-gso; docs/pod-ports.md, "The uplink's UDP
// super-packets") through a real kernel, on a veth in a network namespace of the test's own.
// A pod's 5-segment TCP super-packet behind VXLAN goes out of the uplink socket as one
// GSO_UDP_L4 message (SocketSender, UplinkSegmenting::UdpGso):
//  - with the veth's UDP segmentation on, the peer end's AF_PACKET socket (vnet headers, as
//    the dataplane's uplink socket) receives it whole; parse_uplink_super and
//    split_uplink_super turn it into five VXLAN frames, each inner checksum verified;
//  - with it off, the kernel cuts it itself and the peer end receives five ordinary VXLAN
//    frames, each with a complete and right inner TCP checksum.
// Either way every frame is what the per-segment sender would have put on the wire: outer
// IPv4 and UDP lengths and checksums, the inner IPv4 ID, sequence number, flags and payload.
// Needs root (a network namespace): skipped without, failed when VXFED_REQUIRE_ALL=1 (CI).
#include <gtest/gtest.h>

#include <net/if.h>
#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/uplink_super.hpp"
#include "dataplane/core/vnet_parse.hpp"
#include "dataplane/runtime/packet_socket.hpp"
#include "dataplane/runtime/uplink_sockets.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/frames.hpp"
#include "tests/dataplane/mbufs.hpp"
#include "tests/dataplane/runtime/own_netns.hpp"

namespace vxfed::test {
namespace {

namespace dp = vxfed::dataplane;

constexpr std::uint16_t kMss = 1400;
constexpr std::uint32_t kSegments = 5, kLast = 321;  // four of kMss, one of kLast
constexpr std::uint32_t kSeq = 0x20000000;
constexpr std::uint16_t kInnerId = 500, kOuterId = 9000;
const std::uint32_t kPodA = ip("10.244.1.10"), kPodB = ip("10.245.1.20");
const std::uint32_t kVtepA = ip("192.0.2.1"), kVtepB = ip("192.0.2.2");
constexpr std::size_t kOuter = 14 + 20 + 8 + 8, kInnerIp = kOuter + 14, kInnerTcp = kInnerIp + 20;

// The super-packet as the pod burst hands it to the uplink sender: VXLAN-encapsulated once,
// its inner TCP checksum pending, to be cut into kMss segments; in a chain of 2 KiB mbufs.
rte_mbuf* encapsulated_super_packet(const Bytes& data) {
  const Bytes inner = ethernet(mac("02:00:00:00:00:0b"), mac("02:00:00:00:00:0a"), 0x0800,
                               ipv4(kPodA, kPodB, 6, tcp_partial(kPodA, kPodB, kSeq, 0x18, data),
                                    Ipv4Opts{.id = kInnerId, .df = true}));
  Bytes f = vxlan_frame(mac("02:00:00:00:00:02"), mac("02:00:00:00:00:01"), kVtepA, kVtepB, 49999, 1000, inner);
  put16(f, 14 + 4, kOuterId);
  rte_mbuf* m = make_mbuf(f, small_pool(), 2048 - 128);
  if (m == nullptr) return nullptr;
  m->ol_flags = RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_TUNNEL_VXLAN |
                RTE_MBUF_F_TX_OUTER_IPV4;
  m->outer_l2_len = dp::kOuterL2Len;
  m->outer_l3_len = dp::kOuterL3Len;
  m->l2_len = dp::kTunnelL2Len;
  m->l3_len = 20;
  m->l4_len = 32;
  m->tso_segsz = kMss;
  return m;
}

// Frame i as the wire should carry it, its inner checksum complete.
void expect_segment(const Bytes& s, std::uint32_t i, const Bytes& data) {
  const std::uint32_t len = i + 1 < kSegments ? kMss : kLast;
  ASSERT_EQ(s.size(), kInnerTcp + 32 + len) << "frame " << i;
  EXPECT_EQ(get16(s, 14 + 2), s.size() - 14) << "outer IPv4 total length, frame " << i;
  EXPECT_EQ(get16(s, 14 + 4), kOuterId + i) << "outer IPv4 ID, frame " << i;
  EXPECT_TRUE(ipv4_checksum_ok(s, 14)) << "outer IPv4 checksum, frame " << i;
  EXPECT_EQ(get16(s, 34 + 4), s.size() - 34) << "outer UDP length, frame " << i;
  EXPECT_EQ(get16(s, 34 + 2), 4789) << "outer UDP port, frame " << i;
  EXPECT_EQ(get16(s, kInnerIp + 2), 20 + 32 + len) << "inner IPv4 total length, frame " << i;
  EXPECT_EQ(get16(s, kInnerIp + 4), kInnerId + i) << "inner IPv4 ID, frame " << i;
  EXPECT_TRUE(ipv4_checksum_ok(s, kInnerIp)) << "inner IPv4 checksum, frame " << i;
  EXPECT_EQ(get32(s, kInnerTcp + 4), kSeq + i * kMss) << "sequence number, frame " << i;
  EXPECT_EQ(s.at(kInnerTcp + 13), i + 1 < kSegments ? 0x10 : 0x18) << "TCP flags, frame " << i;
  EXPECT_TRUE(l4_checksum_ok(s, kInnerIp)) << "inner TCP checksum, frame " << i;
  EXPECT_TRUE(std::equal(s.begin() + kInnerTcp + 32, s.end(), data.begin() + i * kMss)) << "payload, frame " << i;
}

// As the dataplane opens its uplink sockets with --uplink-gso: through the qdisc layer.
int open_on(const char* iface) {
  dp::PacketSocketConfig c;
  c.ifindex = ::if_nametoindex(iface);
  c.qdisc_bypass = false;
  c.what = iface;
  auto fd = dp::open_packet_socket(c);
  EXPECT_TRUE(fd) << (fd ? "" : fd.error());
  return fd ? *fd : -1;
}

// The next IPv4 frames on fd within 500 ms, up to `want`, with their vnet headers.
std::vector<std::pair<rte_mbuf*, wire::VirtioNetHeader>> receive(int fd, unsigned want) {
  std::vector<std::pair<rte_mbuf*, wire::VirtioNetHeader>> got;
  dp::SocketReceiver rx(jumbo_pool(), 8);
  rte_mbuf* pkts[dp::kMaxBurst];
  wire::VirtioNetHeader vnet[dp::kMaxBurst];
  unsigned ifs[dp::kMaxBurst];
  std::uint64_t refused = 0;
  pollfd p{fd, POLLIN, 0};
  while (got.size() < want && ::poll(&p, 1, 500) > 0) {
    const unsigned n = rx.receive(fd, pkts, vnet, ifs, dp::kMaxBurst, &refused);
    for (unsigned i = 0; i < n; ++i) {
      const auto* b = rte_pktmbuf_mtod(pkts[i], const std::uint8_t*);
      if (pkts[i]->data_len >= 14 && b[12] == 0x08 && b[13] == 0x00)
        got.emplace_back(pkts[i], vnet[i]);
      else
        rte_pktmbuf_free(pkts[i]);
    }
  }
  EXPECT_EQ(refused, 0u);
  return got;
}

TEST(UplinkGso, TheKernelCarriesOurUdpSuperPacketAsTheFramesOfEachSegment) {
  VXFED_REQUIRE_EAL();
  const bool created = run_in_own_netns([&] {
    ASSERT_EQ(std::system("ip link add u0 type veth peer name u1 && ip link set u0 mtu 9000 up && "
                          "ip link set u1 mtu 9000 up"),
              0);
    const int out = open_on("u0"), in = open_on("u1");
    ASSERT_GE(out, 0);
    ASSERT_GE(in, 0);
    receive(in, 100);  // what the links coming up sent
    const Bytes data = payload((kSegments - 1) * kMss + kLast, 5);
    auto sender = std::make_unique<dp::SocketSender>();
    std::uint64_t lost = 0;

    // 1. The veth keeps it whole: one UDP super-packet arrives, cut here.
    rte_mbuf* m = encapsulated_super_packet(data);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(sender->send(out, 0, &m, 1, true, &lost, dp::UplinkSegmenting::UdpGso), 1u);
    auto whole = receive(in, 1);
    ASSERT_EQ(whole.size(), 1u);
    const wire::VirtioNetHeader& h = whole[0].second;
    EXPECT_EQ(h.gso_type, wire::kVnetGsoUdpL4);
    EXPECT_EQ(h.gso_size, 8 + 14 + 20 + 32 + kMss) << "one VXLAN frame's datagram per segment";
    rte_mbuf* big = whole[0].first;
    const dp::UplinkSuperPacket sp = dp::parse_uplink_super(
        h, dp::ByteSpan(rte_pktmbuf_mtod(big, const std::uint8_t*), big->data_len), big->pkt_len);
    ASSERT_TRUE(sp.ok);
    rte_mbuf* frames[dp::kMaxUplinkSuperDatagrams];
    unsigned n = 0;
    ASSERT_EQ(dp::split_uplink_super(big, sp, jumbo_pool(), frames, &n), dp::SplitResult::Done);
    ASSERT_EQ(n, kSegments);
    for (unsigned i = 0; i < n; ++i) {
      EXPECT_TRUE(frames[i]->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_NONE) << "inner checksum verified, frame " << i;
      Bytes s = read_mbuf(frames[i]);
      rte_pktmbuf_free(frames[i]);
      EXPECT_EQ(get16(s, 34 + 6), 0) << "outer UDP checksum: none, frame " << i;
      // Verified and handed on pending: the field holds the pseudo-header sum again.
      EXPECT_EQ(get16(s, kInnerTcp + 16), pseudo_sum(kPodA, kPodB, 6, s.size() - kInnerTcp)) << "frame " << i;
      put16(s, kInnerTcp + 16, checksum(s.data() + kInnerTcp, s.size() - kInnerTcp));
      expect_segment(s, i, data);
    }

    // 2. The veth does not segment UDP: the kernel cuts it on the way out.
    ASSERT_EQ(std::system("ethtool -K u0 tx-udp-segmentation off >/dev/null"), 0);
    m = encapsulated_super_packet(data);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(sender->send(out, 0, &m, 1, true, &lost, dp::UplinkSegmenting::UdpGso), 1u);
    auto cut = receive(in, kSegments);
    ASSERT_EQ(cut.size(), kSegments);
    for (unsigned i = 0; i < kSegments; ++i) {
      EXPECT_EQ(cut[i].second.gso_type, wire::kVnetGsoNone) << "frame " << i;
      const Bytes s = read_mbuf(cut[i].first);
      rte_pktmbuf_free(cut[i].first);
      expect_segment(s, i, data);
    }
    EXPECT_EQ(lost, 0u);
    ::close(out);
    ::close(in);
  });
  VXFED_SKIP_WITHOUT_OWN_NETNS(created);
}

// --uplink-gso falls back to frames on a kernel whose packet sockets do not take GSO_UDP_L4.
TEST(UplinkGso, NeedsLinux62) {
  EXPECT_FALSE(dp::kernel_takes_udp_gso("6.1.0-27-amd64"));  // Debian 12's own
  EXPECT_FALSE(dp::kernel_takes_udp_gso("5.19.0"));
  EXPECT_TRUE(dp::kernel_takes_udp_gso("6.2.0"));
  EXPECT_TRUE(dp::kernel_takes_udp_gso("6.18.3-pvm"));
  EXPECT_TRUE(dp::kernel_takes_udp_gso("7.0"));
  EXPECT_FALSE(dp::kernel_takes_udp_gso(""));
  EXPECT_FALSE(dp::kernel_takes_udp_gso("linux"));
}

}  // namespace
}  // namespace vxfed::test
