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
// The kernel takes no UDP super-packet of more than 128 segments (checked here on the real
// socket), so a pod's super-packet of hundreds or tens of thousands of segments (a peer's small
// MSS, a pod's gso_size 1) must go as several, each segment arriving, each counted as a frame;
// a frame the kernel refuses is counted as refused and does not stop the frames behind it.
// Needs root (a network namespace): skipped without, failed when VXFED_REQUIRE_ALL=1 (CI).
#include <gtest/gtest.h>

#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
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
rte_mbuf* encapsulated_super_packet(const Bytes& data, std::uint16_t mss = kMss) {
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
  m->tso_segsz = mss;
  return m;
}

// Frame i as the wire should carry it, its inner checksum complete.
// mss and count: of the super-packet the data went in (the test's first by default);
// outer_id_step: the outer IPv4 ID counts up from frame to frame (the kernel's UDP
// segmentation does; the per-segment sender keeps the super-packet's).
void expect_segment(const Bytes& s, std::uint32_t i, const Bytes& data, std::uint32_t mss = kMss,
                    std::uint32_t count = kSegments, bool outer_id_step = true) {
  const std::uint32_t len = i + 1 < count ? mss : static_cast<std::uint32_t>(data.size() - (count - 1) * mss);
  ASSERT_EQ(s.size(), kInnerTcp + 32 + len) << "frame " << i;
  EXPECT_EQ(get16(s, 14 + 2), s.size() - 14) << "outer IPv4 total length, frame " << i;
  EXPECT_EQ(get16(s, 14 + 4), static_cast<std::uint16_t>(kOuterId + (outer_id_step ? i : 0))) << "outer IPv4 ID, frame " << i;
  EXPECT_TRUE(ipv4_checksum_ok(s, 14)) << "outer IPv4 checksum, frame " << i;
  EXPECT_EQ(get16(s, 34 + 4), s.size() - 34) << "outer UDP length, frame " << i;
  EXPECT_EQ(get16(s, 34 + 2), 4789) << "outer UDP port, frame " << i;
  EXPECT_EQ(get16(s, kInnerIp + 2), 20 + 32 + len) << "inner IPv4 total length, frame " << i;
  EXPECT_EQ(get16(s, kInnerIp + 4), static_cast<std::uint16_t>(kInnerId + i)) << "inner IPv4 ID, frame " << i;
  EXPECT_TRUE(ipv4_checksum_ok(s, kInnerIp)) << "inner IPv4 checksum, frame " << i;
  EXPECT_EQ(get32(s, kInnerTcp + 4), kSeq + i * mss) << "sequence number, frame " << i;
  EXPECT_EQ(s.at(kInnerTcp + 13), i + 1 < count ? 0x10 : 0x18) << "TCP flags, frame " << i;
  EXPECT_TRUE(l4_checksum_ok(s, kInnerIp)) << "inner TCP checksum, frame " << i;
  EXPECT_TRUE(std::equal(s.begin() + kInnerTcp + 32, s.end(), data.begin() + i * mss)) << "payload, frame " << i;
}

// As the dataplane opens its uplink sockets with --uplink-gso: through the qdisc layer.
int open_on(const char* iface, unsigned rcvbuf_bytes = 0) {
  dp::PacketSocketConfig c;
  c.ifindex = ::if_nametoindex(iface);
  c.rcvbuf_bytes = rcvbuf_bytes;
  c.qdisc_bypass = false;
  c.what = iface;
  auto fd = dp::open_packet_socket(c);
  EXPECT_TRUE(fd) << (fd ? "" : fd.error());
  return fd ? *fd : -1;
}

// The uplink sender as the worker calls it.
std::uint16_t send_up(dp::SocketSender& s, int fd, rte_mbuf** p, std::uint16_t n, dp::SendTally* t,
                      dp::UplinkSegmenting segmenting) {
  return s.send(fd, 0, p, n, true, t, segmenting);
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
    dp::SendTally tally;

    // 1. The veth keeps it whole: one UDP super-packet arrives, cut here.
    rte_mbuf* m = encapsulated_super_packet(data);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(sender->send(out, 0, &m, 1, true, &tally, dp::UplinkSegmenting::UdpGso), 1u);
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
    ASSERT_EQ(sender->send(out, 0, &m, 1, true, &tally, dp::UplinkSegmenting::UdpGso), 1u);
    auto cut = receive(in, kSegments);
    ASSERT_EQ(cut.size(), kSegments);
    for (unsigned i = 0; i < kSegments; ++i) {
      EXPECT_EQ(cut[i].second.gso_type, wire::kVnetGsoNone) << "frame " << i;
      const Bytes s = read_mbuf(cut[i].first);
      rte_pktmbuf_free(cut[i].first);
      expect_segment(s, i, data);
    }
    EXPECT_EQ(tally.frames, 2 * kSegments) << "each segment counted as a frame";
    EXPECT_EQ(tally.queue_full + tally.refused, 0u);
    ::close(out);
    ::close(in);
  });
  VXFED_SKIP_WITHOUT_OWN_NETNS(created);
}

// A GSO_UDP_L4 message as a packet socket takes it: Ethernet, IPv4 and UDP to 4789 over
// `segments` datagrams of `size` bytes, the UDP checksum pending. 0, or the errno of the send.
int send_udp_super_message(int fd, std::uint32_t segments, std::uint16_t size) {
  Bytes f = ethernet(mac("02:00:00:00:00:02"), mac("02:00:00:00:00:01"), 0x0800,
                     ipv4(kVtepA, kVtepB, 17, udp(49999, 4789, payload(segments * size, 3))));
  put16(f, 34 + 6, pseudo_sum(kVtepA, kVtepB, 17, f.size() - 34));
  wire::VirtioNetHeader vh{};
  vh.flags = wire::kVnetNeedsCsum;
  vh.gso_type = wire::kVnetGsoUdpL4;
  vh.hdr_len = 42;
  vh.gso_size = size;
  vh.csum_start = 34;
  vh.csum_offset = 6;
  iovec iov[2] = {{&vh, sizeof vh}, {f.data(), f.size()}};
  msghdr h{};
  h.msg_iov = iov;
  h.msg_iovlen = 2;
  return ::sendmsg(fd, &h, 0) < 0 ? errno : 0;
}

// The limit the sender keeps to is the kernel's own: UDP_MAX_SEGMENTS.
TEST(UplinkGso, TheKernelRefusesMoreThan128Segments) {
  const bool created = run_in_own_netns([&] {
    ASSERT_EQ(std::system("ip link add u0 type veth peer name u1 && ip link set u0 up && ip link set u1 up"), 0);
    const int out = open_on("u0");
    ASSERT_GE(out, 0);
    EXPECT_EQ(send_udp_super_message(out, dp::kKernelUdpGsoMaxSegments, 100), 0);
    EXPECT_EQ(send_udp_super_message(out, dp::kKernelUdpGsoMaxSegments + 1, 100), EINVAL);
    EXPECT_EQ(send_udp_super_message(out, 2 * dp::kKernelUdpGsoMaxSegments, 100), EINVAL);
    ::close(out);
  });
  VXFED_SKIP_WITHOUT_OWN_NETNS(created);
}

// Every IPv4 frame that arrives on fd (until `want`, or 500 ms without one), whole UDP
// super-packets cut into their datagrams as the dataplane does, each handed to fn with what
// its vnet header left pending completed.
template <typename Fn>
unsigned receive_frames(int fd, unsigned want, Fn&& fn) {
  unsigned got = 0;
  dp::SocketReceiver rx(small_pool(), 8);
  rte_mbuf* pkts[dp::kMaxBurst];
  wire::VirtioNetHeader vnet[dp::kMaxBurst];
  unsigned ifs[dp::kMaxBurst];
  std::uint64_t refused = 0;
  auto take = [&](rte_mbuf* m, const wire::VirtioNetHeader& h) {
    Bytes s = read_mbuf(m);
    rte_pktmbuf_free(m);
    if (h.flags & wire::kVnetNeedsCsum) put16(s, h.csum_start + h.csum_offset, checksum(s.data() + h.csum_start, s.size() - h.csum_start));
    fn(s, got++);
  };
  pollfd p{fd, POLLIN, 0};
  while (got < want && ::poll(&p, 1, 500) > 0) {
    const unsigned n = rx.receive(fd, pkts, vnet, ifs, dp::kMaxBurst, &refused);
    for (unsigned i = 0; i < n; ++i) {
      rte_mbuf* m = pkts[i];
      const auto* b = rte_pktmbuf_mtod(m, const std::uint8_t*);
      if (m->data_len < 14 || b[12] != 0x08 || b[13] != 0x00) {
        rte_pktmbuf_free(m);
        continue;
      }
      if (vnet[i].gso_type != wire::kVnetGsoUdpL4) {
        take(m, vnet[i]);
        continue;
      }
      const dp::UplinkSuperPacket sp = dp::parse_uplink_super(vnet[i], dp::ByteSpan(b, m->data_len), m->pkt_len);
      EXPECT_TRUE(sp.ok) << "a UDP super-packet the dataplane refuses, after " << got << " frames";
      rte_mbuf* frames[dp::kMaxUplinkSuperDatagrams];
      unsigned k = 0;
      const dp::SplitResult r = sp.ok ? dp::split_uplink_super(m, sp, small_pool(), frames, &k) : dp::SplitResult::Refused;
      if (!sp.ok) rte_pktmbuf_free(m);
      EXPECT_EQ(r, dp::SplitResult::Done) << "after " << got << " frames";
      // Verified and handed on pending: as the frame of a peer that left it pending.
      wire::VirtioNetHeader pending{};
      pending.flags = wire::kVnetNeedsCsum;
      pending.csum_start = kInnerTcp;
      pending.csum_offset = 16;
      for (unsigned j = 0; j < k; ++j)
        take(frames[j], frames[j]->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_NONE ? pending : wire::VirtioNetHeader{});
    }
  }
  EXPECT_EQ(refused, 0u);
  return got;
}

// A pod's super-packet of far more segments than one UDP super-packet may carry: a peer that
// advertised MSS 88, a pod's gso_size 1. Each is sent (never dropped), every frame arrives
// as the wire should carry it, and each frame is counted.
TEST(UplinkGso, SuperPacketsOfThousandsOfSegmentsArriveFrameByFrame) {
  VXFED_REQUIRE_EAL();
  struct Case {
    const char* what;
    std::uint16_t mss;
    std::uint32_t bytes;
    dp::UplinkSegmenting segmenting;
    bool kernel_cuts;  // the veth's UDP segmentation off: the kernel cuts our UDP super-packets
  };
  const Case cases[] = {
      {"MSS 88, UDP super-packets kept whole by the veth", 88, 60000, dp::UplinkSegmenting::UdpGso, false},
      {"MSS 88, UDP super-packets cut by the kernel", 88, 60000, dp::UplinkSegmenting::UdpGso, true},
      {"MSS 88, frame by frame (--uplink-gso 0)", 88, 60000, dp::UplinkSegmenting::PerSegment, false},
      {"gso_size 1, UDP super-packets kept whole", 1, 60000, dp::UplinkSegmenting::UdpGso, false},
      {"gso_size 1, frame by frame (--uplink-gso 0)", 1, 60000, dp::UplinkSegmenting::PerSegment, false},
  };
  const bool created = run_in_own_netns([&] {
    ASSERT_EQ(std::system("ip link add u0 type veth peer name u1 && ip link set u0 up && ip link set u1 up"), 0);
    const int out = open_on("u0"), in = open_on("u1", 256u << 20);  // 60,000 frames wait for the reader
    ASSERT_GE(out, 0);
    ASSERT_GE(in, 0);
    receive_frames(in, 1000, [](const Bytes&, unsigned) {});  // what the links coming up sent
    auto sender = std::make_unique<dp::SocketSender>();
    bool cutting = false;
    for (const Case& c : cases) {
      SCOPED_TRACE(c.what);
      if (c.kernel_cuts != cutting) {
        ASSERT_EQ(std::system(c.kernel_cuts ? "ethtool -K u0 tx-udp-segmentation off >/dev/null"
                                            : "ethtool -K u0 tx-udp-segmentation on >/dev/null"),
                  0);
        cutting = c.kernel_cuts;
      }
      const Bytes data = payload(c.bytes, 7);
      const std::uint32_t count = (c.bytes + c.mss - 1) / c.mss;
      rte_mbuf* m = encapsulated_super_packet(data, c.mss);
      ASSERT_NE(m, nullptr);
      dp::SendTally tally;
      ASSERT_EQ(send_up(*sender, out, &m, 1, &tally, c.segmenting), 1u) << "the super-packet was not sent";
      EXPECT_EQ(tally.frames, count) << "frames counted as sent";
      EXPECT_EQ(tally.bytes, std::uint64_t{count} * (kInnerTcp + 32) + c.bytes) << "bytes on the wire";
      EXPECT_EQ(tally.queue_full + tally.refused, 0u);
      const unsigned got = receive_frames(in, count, [&](const Bytes& s, unsigned i) {
        if (!::testing::Test::HasFailure())
          expect_segment(s, i, data, c.mss, count, c.segmenting == dp::UplinkSegmenting::UdpGso);
      });
      EXPECT_EQ(got, count) << "frames arrived";
    }
    ::close(out);
    ::close(in);
  });
  VXFED_SKIP_WITHOUT_OWN_NETNS(created);
}

// A frame the kernel refuses (here one over the interface's MTU: EMSGSIZE) is dropped and
// counted as refused, and the frames behind it in the burst still go.
TEST(UplinkGso, AFrameTheKernelRefusesDoesNotStopTheBurst) {
  VXFED_REQUIRE_EAL();
  const bool created = run_in_own_netns([&] {
    ASSERT_EQ(std::system("ip link add u0 type veth peer name u1 && ip link set u0 up && ip link set u1 up"), 0);
    const int out = open_on("u0"), in = open_on("u1");
    ASSERT_GE(out, 0);
    ASSERT_GE(in, 0);
    receive_frames(in, 1000, [](const Bytes&, unsigned) {});
    auto frame = [](std::size_t inner_bytes, std::uint16_t id) {
      const Bytes inner = ethernet(mac("02:00:00:00:00:0b"), mac("02:00:00:00:00:0a"), 0x0800,
                                   ipv4(kPodA, kPodB, 17, udp(1000, 2000, payload(inner_bytes, 1)), Ipv4Opts{.id = id}));
      return vxlan_frame(mac("02:00:00:00:00:02"), mac("02:00:00:00:00:01"), kVtepA, kVtepB, 49999, 1000, inner);
    };
    const Bytes small1 = frame(100, 1), big = frame(1600, 2), small2 = frame(100, 3);
    rte_mbuf* pkts[3] = {make_mbuf(small1, small_pool()), make_mbuf(big, small_pool()), make_mbuf(small2, small_pool())};
    for (rte_mbuf* m : pkts) ASSERT_NE(m, nullptr);
    auto sender = std::make_unique<dp::SocketSender>();
    dp::SendTally tally;
    EXPECT_EQ(send_up(*sender, out, pkts, 3, &tally, dp::UplinkSegmenting::UdpGso), 3u) << "all three consumed";
    EXPECT_EQ(tally.frames, 2u);
    EXPECT_EQ(tally.bytes, small1.size() + small2.size());
    EXPECT_EQ(tally.refused, 1u);
    EXPECT_EQ(tally.queue_full, 0u);
    std::vector<Bytes> got;
    receive_frames(in, 3, [&](const Bytes& s, unsigned) { got.push_back(s); });
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0], small1);
    EXPECT_EQ(got[1], small2);
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
