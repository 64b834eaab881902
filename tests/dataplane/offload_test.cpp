// Packet tests of the offload state (docs/pod-ports.md: vnet headers): the vnet header check
// of frames from the pods and the uplink, a pod's TCP super-packet through the real pod burst
// and the software segmentation of the DPDK ports' sender, the segments the uplink socket
// hands the kernel, a pending inner checksum through decapsulation, and the coalescing of
// segments for a pod. Expected bytes and checksums are computed here, independently of the
// code under test (frames.hpp's builders and checksum).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <map>
#include <memory>
#include <random>
#include <vector>

#include "dataplane/core/coalesce.hpp"
#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/pipeline.hpp"
#include "dataplane/core/segment.hpp"
#include "dataplane/core/uplink_super.hpp"
#include "dataplane/core/vnet_parse.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/frames.hpp"
#include "tests/dataplane/mbufs.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

using dp::DropReason;
using wire::VirtioNetHeader;

const std::uint32_t kPod1Ip = ip("10.244.1.10"), kPod2Ip = ip("10.244.1.11");
const std::uint32_t kRemote = ip("10.245.1.20");  // behind VTEP 198.18.0.2
constexpr std::uint32_t kSeq = 0x10000000;

Bytes pod_tcp(std::uint32_t dst, std::uint32_t seq, std::uint8_t flags, const Bytes& data, std::uint16_t id = 7) {
  return ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                  ipv4(kPod1Ip, dst, 6, tcp_partial(kPod1Ip, dst, seq, flags, data), Ipv4Opts{.id = id, .df = true}));
}

VirtioNetHeader vnet(std::uint8_t flags, std::uint8_t gso, std::uint16_t gso_size, std::uint16_t start,
                     std::uint16_t offset) {
  return VirtioNetHeader{flags, gso, 0, gso_size, start, offset};
}
dp::VnetVerdict pod_verdict(const VirtioNetHeader& h, const Bytes& f) {
  return dp::parse_pod_vnet(h, dp::ByteSpan(f.data(), f.size()), static_cast<std::uint32_t>(f.size()));
}

// ---- the vnet header check ----

// The one's-complement sum the software checksums use, against the plain definition: the
// big-endian 16-bit words of all bytes in order (an odd last byte padded with zero), added
// with end-around carry. Fed in random pieces (odd lengths shift the next piece by a byte),
// over random bytes and over all-0xff bytes (every addition carries).
TEST(OnesSum, MatchesTheDefinitionOverAnyPieces) {
  std::mt19937 rng(7);
  for (int round = 0; round < 400; ++round) {
    const std::size_t n = round < 8 ? static_cast<std::size_t>(round) : rng() % 70000;
    Bytes b(n);
    for (auto& x : b) x = round % 5 == 4 ? 0xff : static_cast<std::uint8_t>(rng());
    std::uint32_t want = 0;
    for (std::size_t i = 0; i < n; i += 2) {
      want += static_cast<std::uint32_t>(b[i] << 8 | (i + 1 < n ? b[i + 1] : 0));
      want = (want & 0xffff) + (want >> 16);
    }
    dp::OnesSum s;
    std::size_t at = 0;
    while (at < n) {
      const std::size_t piece = std::min<std::size_t>(n - at, rng() % 3 == 0 ? rng() % 9 : rng() % 20000);
      s.add(b.data() + at, piece);
      at += piece;
    }
    ASSERT_EQ(s.folded(), want) << "round " << round << ", " << n << " bytes";
  }
}

TEST(VnetParse, PodTcpSuperPacketTaken) {
  const Bytes f = pod_tcp(kRemote, kSeq, 0x18, payload(3 * 8000 + 100));
  const auto v = pod_verdict(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv4, 8000, 34, 16), f);
  ASSERT_TRUE(v.ok);
  EXPECT_EQ(v.offload.checksum, dp::L4Checksum::Partial);
  EXPECT_EQ(v.offload.gso, dp::Segmentation::Tcp);
  EXPECT_EQ(v.offload.gso_size, 8000);
  EXPECT_EQ(v.offload.l3_len, 20);
  EXPECT_EQ(v.offload.l4_len, 32);
}

TEST(VnetParse, PodHeadersThatContradictTheFrameRefused) {
  const Bytes f = pod_tcp(kRemote, kSeq, 0x10, payload(20000));
  struct Bad {
    const char* what;
    VirtioNetHeader h;
  };
  const Bad bad[] = {
      {"csum_start not at the TCP header", vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv4, 8000, 38, 16)},
      {"csum_offset of UDP on TCP", vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv4, 8000, 34, 6)},
      {"GSO without NEEDS_CSUM", vnet(0, wire::kVnetGsoTcpv4, 8000, 34, 16)},
      {"UDP segmentation on a TCP packet", vnet(wire::kVnetNeedsCsum, wire::kVnetGsoUdpL4, 8000, 34, 16)},
      {"UDP fragmentation offload", vnet(wire::kVnetNeedsCsum, wire::kVnetGsoUdp, 8000, 34, 16)},
      {"IPv6 GSO on IPv4", vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv6, 8000, 34, 16)},
      {"gso_size 0", vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv4, 0, 34, 16)},
      {"segments larger than an IPv4 packet", vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv4, 65500, 34, 16)},
      {"unknown flag", vnet(wire::kVnetNeedsCsum | 4, wire::kVnetGsoNone, 0, 34, 16)},
      {"NEEDS_CSUM and DATA_VALID", vnet(wire::kVnetNeedsCsum | wire::kVnetDataValid, 0, 0, 34, 16)},
  };
  for (const Bad& b : bad) {
    const auto v = pod_verdict(b.h, f);
    EXPECT_FALSE(v.ok) << b.what;
    EXPECT_EQ(v.drop, DropReason::BadVnetHeader) << b.what;
  }
  // The IPv4 total length claims less than the frame holds: a super-packet must fill it.
  Bytes shortened = f;
  shortened.insert(shortened.end(), 100, 0);
  EXPECT_FALSE(pod_verdict(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv4, 8000, 34, 16), shortened).ok);
  // A pending checksum on a fragment cannot be finished by anyone.
  const Bytes frag = ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                              ipv4(kPod1Ip, kRemote, 17, udp(1, 2, payload(100)), Ipv4Opts{.mf = true}));
  EXPECT_FALSE(pod_verdict(vnet(wire::kVnetNeedsCsum, 0, 0, 34, 6), frag).ok);
}

TEST(VnetParse, PodChecksumStates) {
  const Bytes f = pod_tcp(kRemote, kSeq, 0x10, payload(100));
  const auto none = pod_verdict(vnet(0, 0, 0, 0, 0), f);
  ASSERT_TRUE(none.ok);
  EXPECT_EQ(none.offload.checksum, dp::L4Checksum::Complete);
  const auto valid = pod_verdict(vnet(wire::kVnetDataValid, 0, 0, 0, 0), f);
  ASSERT_TRUE(valid.ok);
  EXPECT_EQ(valid.offload.checksum, dp::L4Checksum::Verified);
  const auto partial = pod_verdict(vnet(wire::kVnetNeedsCsum, 0, 0, 34, 16), f);
  ASSERT_TRUE(partial.ok);
  EXPECT_EQ(partial.offload.checksum, dp::L4Checksum::Partial);
  EXPECT_EQ(partial.offload.gso, dp::Segmentation::None);
  // A frame too short to hold the headers it claims.
  const Bytes cut(f.begin(), f.begin() + 40);
  EXPECT_FALSE(dp::parse_pod_vnet(vnet(wire::kVnetNeedsCsum, 0, 0, 34, 16), dp::ByteSpan(cut.data(), cut.size()),
                                  static_cast<std::uint32_t>(cut.size())).ok);
}

TEST(VnetParse, UplinkPendingChecksumInsideVxlan) {
  const Bytes inner = ethernet(kPod1Mac, gateway_mac(kVniA), 0x0800,
                               ipv4(kRemote, kPod1Ip, 6, tcp_partial(kRemote, kPod1Ip, kSeq, 0x10, payload(500))));
  const Bytes f = vxlan_frame(kUplinkMac, neighbor_mac(2), ip("198.18.0.2"), ip("198.18.0.1"), 50000, kVniA, inner);
  const auto span = dp::ByteSpan(f.data(), f.size());
  const auto n = static_cast<std::uint32_t>(f.size());
  const auto inner_tcp = dp::parse_uplink_vnet(vnet(wire::kVnetNeedsCsum, 0, 0, 50 + 34, 16), span, n);
  ASSERT_TRUE(inner_tcp.ok);
  EXPECT_EQ(inner_tcp.offload.checksum, dp::L4Checksum::Partial);
  EXPECT_TRUE(inner_tcp.offload.encapsulated);
  // The outer UDP checksum pending: it goes with the outer headers, nothing to carry.
  const auto outer = dp::parse_uplink_vnet(vnet(wire::kVnetNeedsCsum, 0, 0, 34, 6), span, n);
  ASSERT_TRUE(outer.ok);
  EXPECT_EQ(outer.offload.checksum, dp::L4Checksum::Complete);
  // Pending somewhere that is neither: refused. A super-packet from the wire: refused.
  EXPECT_FALSE(dp::parse_uplink_vnet(vnet(wire::kVnetNeedsCsum, 0, 0, 50 + 30, 16), span, n).ok);
  EXPECT_FALSE(dp::parse_uplink_vnet(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv4, 1000, 84, 16), span, n).ok);
}

// ---- UDP super-packets from the uplink (a peer's --uplink-gso over a veth) ----

// An inner TCP segment from the remote pod to pod 1, its checksum complete (or, `corrupt`,
// wrong by one payload byte), as the datagram of one VXLAN frame.
Bytes vxlan_datagram(std::uint32_t seq, const Bytes& data, bool corrupt = false) {
  Bytes t = tcp_partial(kRemote, kPod1Ip, seq, 0x10, data);
  put16(t, 16, checksum(t.data(), t.size()));  // the field held the pseudo-header sum
  if (corrupt) t.back() ^= 1;
  return vxlan(kVniA, ethernet(kPod1Mac, gateway_mac(kVniA), 0x0800, ipv4(kRemote, kPod1Ip, 6, t)));
}
Bytes uplink_super(const Bytes& datagrams, int udp_length_delta = 0, std::uint16_t port = 4789, std::uint8_t ihl = 5) {
  return ethernet(kUplinkMac, neighbor_mac(2), 0x0800,
                  ipv4(ip("198.18.0.2"), ip("198.18.0.1"), 17, udp(50000, port, datagrams, udp_length_delta),
                       Ipv4Opts{.id = 77, .df = true, .ihl = ihl}));
}
dp::UplinkSuperPacket super_verdict(const VirtioNetHeader& h, const Bytes& f) {
  return dp::parse_uplink_super(h, dp::ByteSpan(f.data(), f.size()), static_cast<std::uint32_t>(f.size()));
}

TEST(VnetParse, UplinkUdpSuperPacketTakenOnlyAsVxlanDatagrams) {
  Bytes d;
  for (int i = 0; i < 3; ++i) {
    const Bytes g = vxlan_datagram(kSeq + i * 1000, payload(1000, 1));
    d.insert(d.end(), g.begin(), g.end());
  }
  const std::uint16_t gso = static_cast<std::uint16_t>(d.size() / 3);
  const Bytes f = uplink_super(d);
  const auto ok = super_verdict(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoUdpL4, gso, 34, 6), f);
  ASSERT_TRUE(ok.ok);
  EXPECT_EQ(ok.gso_size, gso);
  EXPECT_EQ(ok.payload_len, d.size());
  // The checksum pending elsewhere, DATA_VALID, another gso_type, room for no VXLAN frame.
  EXPECT_FALSE(super_verdict(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoUdpL4, gso, 84, 16), f).ok);
  EXPECT_FALSE(super_verdict(vnet(wire::kVnetDataValid, wire::kVnetGsoUdpL4, gso, 34, 6), f).ok);
  EXPECT_FALSE(super_verdict(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv4, gso, 34, 6), f).ok);
  EXPECT_FALSE(super_verdict(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoUdpL4, 41, 34, 6), f).ok);
  // Not to the VXLAN port, a UDP length that disagrees, outer IPv4 options.
  EXPECT_FALSE(super_verdict(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoUdpL4, gso, 34, 6), uplink_super(d, 0, 4790)).ok);
  EXPECT_FALSE(super_verdict(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoUdpL4, gso, 34, 6), uplink_super(d, -2)).ok);
  EXPECT_FALSE(super_verdict(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoUdpL4, gso, 38, 6), uplink_super(d, 0, 4789, 6)).ok);
}

// Cut into its three datagrams: each a whole VXLAN frame (outer lengths, ID + i, checksums),
// the inner checksums verified and handed on pending, except the wrong one, left as it came
// for the pod's kernel to refuse.
TEST(UplinkSuper, CutIntoItsDatagramsInnerChecksumsVerified) {
  VXFED_REQUIRE_EAL();
  std::vector<Bytes> g = {vxlan_datagram(kSeq, payload(1000, 1)), vxlan_datagram(kSeq + 1000, payload(1000, 2), true),
                          vxlan_datagram(kSeq + 2000, payload(600, 3))};
  Bytes d;
  for (const Bytes& x : g) d.insert(d.end(), x.begin(), x.end());
  const Bytes f = uplink_super(d);
  rte_mbuf* m = make_mbuf(f, small_pool(), 2048 - 128);  // a chain, as the uplink socket fills it
  ASSERT_NE(m, nullptr);
  const auto sp = dp::parse_uplink_super(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoUdpL4, g[0].size(), 34, 6),
                                         dp::ByteSpan(rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len), m->pkt_len);
  ASSERT_TRUE(sp.ok);
  rte_mbuf* out[dp::kMaxUplinkSuperDatagrams];
  unsigned n = 0;
  ASSERT_EQ(dp::split_uplink_super(m, sp, jumbo_pool(), out, &n), dp::SplitResult::Done);
  ASSERT_EQ(n, 3u);
  for (unsigned i = 0; i < n; ++i) {
    const Bytes s = read_mbuf(out[i]);
    const bool verified = (out[i]->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_NONE;
    rte_pktmbuf_free(out[i]);
    ASSERT_EQ(s.size(), 42 + g[i].size()) << "frame " << i;
    EXPECT_EQ(get16(s, 16), s.size() - 14) << "outer IPv4 total length, frame " << i;
    EXPECT_EQ(get16(s, 18), 77 + i) << "outer IPv4 ID, frame " << i;
    EXPECT_TRUE(ipv4_checksum_ok(s, 14)) << "frame " << i;
    EXPECT_EQ(get16(s, 38), s.size() - 34) << "outer UDP length, frame " << i;
    EXPECT_EQ(get16(s, 40), 0) << "outer UDP checksum, frame " << i;
    EXPECT_EQ(verified, i != 1) << "frame " << i;
    Bytes want = g[i];
    if (i != 1) put16(want, 8 + 14 + 20 + 16, pseudo_sum(kRemote, kPod1Ip, 6, want.size() - 8 - 14 - 20));
    EXPECT_TRUE(std::equal(s.begin() + 42, s.end(), want.begin())) << "datagram " << i << ": "
                                                                  << hex_diff(want, Bytes(s.begin() + 42, s.end()));
  }
  // More datagrams than a super-packet may carry, and one larger than an mbuf: refused.
  const Bytes many = uplink_super(payload(65 * 42, 4));
  m = make_mbuf(many, small_pool(), 2048 - 128);
  auto big = dp::parse_uplink_super(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoUdpL4, 42, 34, 6),
                                    dp::ByteSpan(rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len), m->pkt_len);
  ASSERT_TRUE(big.ok);
  EXPECT_EQ(dp::split_uplink_super(m, big, jumbo_pool(), out, &n), dp::SplitResult::Refused);
  EXPECT_EQ(n, 0u);
  m = make_mbuf(f, small_pool(), 2048 - 128);
  big = dp::parse_uplink_super(vnet(wire::kVnetNeedsCsum, wire::kVnetGsoUdpL4, 2100, 34, 6),
                               dp::ByteSpan(rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len), m->pkt_len);
  ASSERT_TRUE(big.ok);
  EXPECT_EQ(dp::split_uplink_super(m, big, small_pool(), out, &n), dp::SplitResult::Refused);
}

// ---- through the pipeline ----

class Offload : public ::testing::Test {
 protected:
  void SetUp() override {
    VXFED_REQUIRE_EAL();
    auto t = node_.build(sample_tables());
    ASSERT_TRUE(t.ok()) << t.error();
    tables_ = std::move(*t);
    counters_ = std::make_unique<dp::WorkerCounters>();
    tx_ = std::make_unique<dp::TxStage>();
  }
  void TearDown() override {
    tx_->flush([](std::uint16_t, rte_mbuf** p, std::uint16_t n) {
      rte_pktmbuf_free_bulk(p, n);
      return n;
    }, *counters_);
  }
  // A pod frame as the pod socket hands it over: in 2 KiB mbufs, its checked vnet state set.
  rte_mbuf* from_pod(const Bytes& f, const VirtioNetHeader& h) {
    rte_mbuf* m = make_mbuf(f, small_pool(), 2048 - 128);
    EXPECT_NE(m, nullptr);
    const auto v = dp::parse_pod_vnet(h, dp::ByteSpan(rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len),
                                      m->pkt_len);
    EXPECT_TRUE(v.ok);
    dp::set_rx_offload(m, v.offload);
    return m;
  }
  // The staged mbufs per port (still ours).
  std::map<std::uint16_t, std::vector<rte_mbuf*>> staged() {
    std::map<std::uint16_t, std::vector<rte_mbuf*>> out;
    tx_->flush([&](std::uint16_t port, rte_mbuf** p, std::uint16_t n) {
      out[port].insert(out[port].end(), p, p + n);
      return n;
    }, *counters_);
    return out;
  }
  std::uint64_t drops() const {
    std::uint64_t n = 0;
    for (std::uint32_t r = 0; r < dp::kDropReasonCount; ++r) n += counters_->drops[r].get();
    return n;
  }

  Node node_;
  std::unique_ptr<dp::ForwardingTables> tables_;
  std::unique_ptr<dp::WorkerCounters> counters_;
  std::unique_ptr<dp::TxStage> tx_;
};

// A pod's 4-segment TCP super-packet (MSS 1400, pending checksum, PSH) to a remote pod:
// encapsulated once, then cut by the DPDK ports' software path into four VXLAN frames, each
// with complete and right inner TCP, inner IPv4 and outer IPv4 checksums, lengths and
// sequence numbers, PSH only on the last, the payload intact in order.
TEST_F(Offload, PodSuperPacketEncapsulatedThenSegmentedInSoftware) {
  constexpr std::uint16_t kMss = 1400;
  const Bytes data = payload(3 * kMss + 333, 9);
  const Bytes f = pod_tcp(kRemote, kSeq, 0x18, data, 100);
  rte_mbuf* m = from_pod(f, vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv4, kMss, 34, 16));
  dp::process_pod_burst(*tables_, kPod1, &m, 1, *tx_, *counters_);
  auto out = staged();
  ASSERT_EQ(out[kUplink].size(), 1u);
  EXPECT_EQ(drops(), 0u);
  rte_mbuf* enc = out[kUplink][0];
  EXPECT_TRUE(enc->ol_flags & RTE_MBUF_F_TX_TCP_SEG);
  EXPECT_TRUE(dp::tx_encapsulated(enc));

  rte_mbuf* segs[8];
  bool alloc_failed = true;
  const unsigned n = dp::finish_offloads(enc, small_pool(), segs, 8, &alloc_failed);
  ASSERT_FALSE(alloc_failed);
  ASSERT_EQ(n, 4u);
  Bytes joined;
  for (unsigned i = 0; i < n; ++i) {
    const Bytes s = read_mbuf(segs[i]);
    EXPECT_EQ(segs[i]->ol_flags, 0u) << "segment " << i << " left with pending work";
    rte_pktmbuf_free(segs[i]);
    const std::size_t len = i + 1 < n ? kMss : 333;
    ASSERT_EQ(s.size(), 50u + 14 + 20 + 32 + len) << "segment " << i;
    EXPECT_EQ(get16(s, 16), s.size() - 14) << "outer IPv4 total length, segment " << i;
    EXPECT_TRUE(ipv4_checksum_ok(s, 14)) << "outer IPv4 checksum, segment " << i;
    EXPECT_EQ(get16(s, 38), s.size() - 34) << "outer UDP length, segment " << i;
    EXPECT_EQ(get16(s, 40), 0) << "outer UDP checksum, segment " << i;
    EXPECT_EQ(get16(s, 64 + 2), 20 + 32 + len) << "inner IPv4 total length, segment " << i;
    EXPECT_EQ(get16(s, 64 + 4), 100 + i) << "inner IPv4 ID, segment " << i;
    EXPECT_TRUE(ipv4_checksum_ok(s, 64)) << "inner IPv4 checksum, segment " << i;
    EXPECT_TRUE(l4_checksum_ok(s, 64)) << "inner TCP checksum, segment " << i;
    EXPECT_EQ(get32(s, 84 + 4), kSeq + i * kMss) << "sequence number, segment " << i;
    EXPECT_EQ(s.at(84 + 13), i + 1 < n ? 0x10 : 0x18) << "TCP flags, segment " << i;
    joined.insert(joined.end(), s.begin() + 50 + 14 + 20 + 32, s.end());
  }
  EXPECT_EQ(joined, data);
}

// What the uplink socket hands the kernel for the same super-packet: each segment's headers
// (written by write_segment_headers) behind a vnet header that leaves only the inner TCP
// checksum to the kernel, at the inner TCP header, and no GSO.
TEST_F(Offload, UplinkSocketSegmentsLeaveTheInnerChecksumToTheKernel) {
  constexpr std::uint16_t kMss = 8000;
  const Bytes data = payload(2 * kMss + 10, 3);
  rte_mbuf* m = from_pod(pod_tcp(kRemote, kSeq, 0x10, data), vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv4, kMss, 34, 16));
  dp::process_pod_burst(*tables_, kPod1, &m, 1, *tx_, *counters_);
  auto out = staged();
  ASSERT_EQ(out[kUplink].size(), 1u);
  rte_mbuf* enc = out[kUplink][0];
  const VirtioNetHeader h = dp::vnet_header_for(enc, true);
  EXPECT_EQ(h.flags, wire::kVnetNeedsCsum);
  EXPECT_EQ(h.gso_type, wire::kVnetGsoNone);
  EXPECT_EQ(h.csum_start, 50 + 34);
  EXPECT_EQ(h.csum_offset, 16);
  const dp::SegmentLayout l = dp::segment_layout(enc);
  ASSERT_EQ(dp::segment_count(l, enc->pkt_len), 3u);
  const Bytes whole = read_mbuf(enc);
  rte_pktmbuf_free(enc);
  for (std::uint32_t i = 0; i < 3; ++i) {
    Bytes s(l.headers());
    const std::uint32_t len = dp::write_segment_headers(l, whole.data(), static_cast<std::uint32_t>(whole.size()), i, s.data());
    EXPECT_EQ(len, i < 2 ? kMss : 10u);
    s.insert(s.end(), whole.begin() + l.headers() + i * kMss, whole.begin() + l.headers() + i * kMss + len);
    // Finish the checksum as the kernel would (the field holds the pseudo-header sum).
    const std::uint16_t c = checksum(s.data() + h.csum_start, s.size() - h.csum_start);
    put16(s, h.csum_start + h.csum_offset, c);
    EXPECT_TRUE(l4_checksum_ok(s, 64)) << "segment " << i;
    EXPECT_TRUE(ipv4_checksum_ok(s, 14) && ipv4_checksum_ok(s, 64)) << "segment " << i;
    EXPECT_EQ(get16(s, 16), s.size() - 14) << "segment " << i;
  }
}

// A super-packet whose segments would not fit the network MTU is refused like any packet too
// big for it (not segmented into frames the underlay cannot carry).
TEST_F(Offload, SuperPacketWithSegmentsAboveTheMtuDropped) {
  rte_mbuf* m = from_pod(pod_tcp(kRemote, kSeq, 0x10, payload(30000)),
                         vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv4, 9000, 34, 16));
  dp::process_pod_burst(*tables_, kPod1, &m, 1, *tx_, *counters_);
  auto out = staged();
  for (auto& [port, v] : out) {
    if (port != kPod1) {
      EXPECT_TRUE(v.empty()) << "port " << port;
    }
  }
  for (rte_mbuf* x : out[kPod1]) rte_pktmbuf_free(x);  // an ICMP "fragmentation needed", if any
  EXPECT_EQ(counters_->drops[static_cast<int>(DropReason::TooBigDf)].get(), 1u);
}

// A pending checksum of a pod's packet for a pod of this node stays pending (its kernel
// finishes it: vnet header NEEDS_CSUM at the TCP header, GSO kept for a super-packet).
TEST_F(Offload, LocalDeliveryKeepsThePendingChecksumAndGso) {
  rte_mbuf* m = from_pod(pod_tcp(kPod2Ip, kSeq, 0x10, payload(5000)),
                         vnet(wire::kVnetNeedsCsum, wire::kVnetGsoTcpv4, 1448, 34, 16));
  dp::process_pod_burst(*tables_, kPod1, &m, 1, *tx_, *counters_);
  auto out = staged();
  ASSERT_EQ(out[kPod2].size(), 1u);
  const VirtioNetHeader h = dp::vnet_header_for(out[kPod2][0]);
  rte_pktmbuf_free(out[kPod2][0]);
  EXPECT_EQ(h.flags, wire::kVnetNeedsCsum);
  EXPECT_EQ(h.csum_start, 34);
  EXPECT_EQ(h.csum_offset, 16);
  EXPECT_EQ(h.gso_type, wire::kVnetGsoTcpv4);
  EXPECT_EQ(h.gso_size, 1448);
}

// A VXLAN frame whose inner TCP checksum is pending, decapsulated for a pod: the pod's vnet
// header says NEEDS_CSUM at the inner TCP header (now at 34).
TEST_F(Offload, DecapsulatedPendingChecksumStaysPending) {
  const Bytes inner = ethernet(gateway_mac(kVniA), neighbor_mac(2), 0x0800,
                               ipv4(kRemote, kPod1Ip, 6, tcp_partial(kRemote, kPod1Ip, kSeq, 0x10, payload(700))));
  const Bytes f = vxlan_frame(kUplinkMac, neighbor_mac(2), ip("198.18.0.2"), ip("198.18.0.1"), 50000, kVniA, inner);
  rte_mbuf* m = make_mbuf(f, small_pool());
  ASSERT_NE(m, nullptr);
  const auto v = dp::parse_uplink_vnet(vnet(wire::kVnetNeedsCsum, 0, 0, 84, 16),
                                       dp::ByteSpan(rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len), m->pkt_len);
  ASSERT_TRUE(v.ok);
  dp::set_rx_offload(m, v.offload);
  dp::process_uplink_burst(*tables_, &m, 1, *tx_, *counters_);
  auto out = staged();
  ASSERT_EQ(out[kPod1].size(), 1u);
  rte_mbuf* d = out[kPod1][0];
  const VirtioNetHeader h = dp::vnet_header_for(d);
  EXPECT_EQ(h.flags, wire::kVnetNeedsCsum);
  EXPECT_EQ(h.csum_start, 34);
  EXPECT_EQ(h.csum_offset, 16);
  EXPECT_EQ(h.gso_type, wire::kVnetGsoNone);
  // Finished in software (a DPDK port), the checksum is right.
  dp::finish_l4_checksum(d);
  EXPECT_TRUE(l4_checksum_ok(read_mbuf(d), 14));
  rte_pktmbuf_free(d);
}

// ---- coalescing for the pods ----

rte_mbuf* pending_segment(std::uint32_t seq, std::uint8_t flags, const Bytes& data, bool pending = true) {
  const Bytes f = ethernet(kPod1Mac, gateway_mac(kVniA), 0x0800,
                           ipv4(kRemote, kPod1Ip, 6, tcp_partial(kRemote, kPod1Ip, seq, flags, data), Ipv4Opts{.df = true}));
  rte_mbuf* m = make_mbuf(f, small_pool());
  if (m == nullptr) return nullptr;
  if (pending) {
    m->ol_flags = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_TCP_CKSUM;
    m->l2_len = 14;
    m->l3_len = 20;
    m->l4_len = 32;
  }
  return m;
}

// Three segments that continue each other become one super-packet (right lengths, IPv4
// checksum, PSH of the last, pseudo-header sum, gso_size = the segments' payload); a
// segment with a complete (unverified) checksum and one out of sequence are left alone.
TEST_F(Offload, CoalescesOnlyContinuingPendingSegments) {
  const Bytes a = payload(1000, 1), b = payload(1000, 2), c = payload(400, 3);
  rte_mbuf* pkts[6] = {
      pending_segment(kSeq, 0x10, a),
      pending_segment(kSeq + 1000, 0x10, b),
      pending_segment(kSeq + 2000, 0x18, c),
      pending_segment(kSeq + 2400, 0x10, a, false),  // complete checksum: the pod verifies it
      pending_segment(kSeq + 9999, 0x10, a),         // not the next sequence number
      pending_segment(kSeq + 10999, 0x10, b),        // continues the one before: merged with it
  };
  for (rte_mbuf* m : pkts) ASSERT_NE(m, nullptr);
  const std::uint16_t n = dp::coalesce_tcp_segments(pkts, 6);
  ASSERT_EQ(n, 3u);
  const Bytes s = read_mbuf(pkts[0]);
  EXPECT_TRUE(pkts[0]->ol_flags & RTE_MBUF_F_TX_TCP_SEG);
  EXPECT_EQ(pkts[0]->tso_segsz, 1000);
  EXPECT_EQ(get16(s, 16), 20 + 32 + 2400);
  EXPECT_TRUE(ipv4_checksum_ok(s, 14));
  EXPECT_EQ(s.at(34 + 13), 0x18);
  EXPECT_EQ(get16(s, 34 + 16), pseudo_sum(kRemote, kPod1Ip, 6, 32 + 2400));
  Bytes data(s.begin() + 66, s.end()), want = a;
  want.insert(want.end(), b.begin(), b.end());
  want.insert(want.end(), c.begin(), c.end());
  EXPECT_EQ(data, want);
  EXPECT_FALSE(pkts[1]->ol_flags & RTE_MBUF_F_TX_TCP_SEG);  // the complete one, as it was
  EXPECT_EQ(rte_pktmbuf_pkt_len(pkts[1]), 14u + 20 + 32 + 1000);
  EXPECT_EQ(rte_pktmbuf_pkt_len(pkts[2]), 14u + 20 + 32 + 2000);
  const VirtioNetHeader h = dp::vnet_header_for(pkts[0]);
  EXPECT_EQ(h.gso_type, wire::kVnetGsoTcpv4);
  EXPECT_EQ(h.gso_size, 1000);
  for (std::uint16_t i = 0; i < n; ++i) rte_pktmbuf_free(pkts[i]);
}

}  // namespace
}  // namespace vxfed::test
