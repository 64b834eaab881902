// Checksum and segmentation state carried on mbufs (docs/pod-ports.md: offload state), in
// DPDK's own terms so that a NIC port could take them as they are.
//
// Received (set by the runtime's socket layer from a checked vnet header, vnet_parse.hpp;
// DPDK ports are configured without RX offloads and carry none of it):
//   RTE_MBUF_F_RX_L4_CKSUM_NONE   the TCP/UDP checksum is pending: the field holds the
//                                 pseudo-header sum, the data is trusted (NEEDS_CSUM);
//                                 packet_type names the L4 (RTE_PTYPE_L4_* or, for a VXLAN
//                                 frame from the uplink, RTE_PTYPE_INNER_L4_*), l3_len and
//                                 l4_len its headers; l2_len = 14 (the inner Ethernet's,
//                                 as after decapsulation)
//   RTE_MBUF_F_RX_L4_CKSUM_GOOD   verified by the kernel (DATA_VALID)
//   RTE_MBUF_F_RX_LRO             a super-packet (with a pending checksum), tso_segsz the
//                                 payload bytes per segment
// To transmit (set by the pipeline, read by the runtime's senders):
//   RTE_MBUF_F_TX_TCP_CKSUM / _UDP_CKSUM   the L4 checksum at l2_len + l3_len (plus
//                                 outer_l2_len + outer_l3_len when encapsulated) is pending
//   RTE_MBUF_F_TX_TCP_SEG / _UDP_SEG       a super-packet to cut into tso_segsz segments
//   RTE_MBUF_F_TX_TUNNEL_VXLAN | _OUTER_IPV4   behind our VXLAN headers: outer_l2_len 14,
//                                 outer_l3_len 20, l2_len 30 (UDP + VXLAN + inner Ethernet)
//   RTE_MBUF_F_TX_IPV4            with any of the above
//   RTE_MBUF_F_RX_L4_CKSUM_GOOD stays beside them when the checksum was verified.
// A packet with none of these flags is finished: every checksum in it is complete.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>

#include "dataplane/core/segment.hpp"
#include "dataplane/core/vnet_parse.hpp"
#include "dataplane/core/wire/ethernet.hpp"
#include "dataplane/core/wire/virtio_net.hpp"

namespace vxfed::dataplane {

constexpr std::uint64_t kTxCsumFlags = RTE_MBUF_F_TX_L4_MASK;
constexpr std::uint64_t kTxSegFlags = RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_UDP_SEG;
// What a sender has to look at: anything it may have to finish.
constexpr std::uint64_t kTxPendingFlags = kTxCsumFlags | kTxSegFlags;
constexpr std::uint16_t kOuterL2Len = 14, kOuterL3Len = 20;
constexpr std::uint16_t kTunnelL2Len = 8 + 8 + 14;  // outer UDP + VXLAN + inner Ethernet

// The runtime's side: a received frame's checked state onto its mbuf.
inline void set_rx_offload(rte_mbuf* m, const FrameOffload& o) {
  if (o.checksum == L4Checksum::Verified) {
    m->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_GOOD;
    return;
  }
  if (o.checksum != L4Checksum::Partial) return;
  const bool tcp = o.l4_proto == 6;
  m->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_NONE;
  if (o.encapsulated) {
    m->packet_type = RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4 | RTE_PTYPE_L4_UDP | RTE_PTYPE_TUNNEL_VXLAN |
                     RTE_PTYPE_INNER_L2_ETHER | RTE_PTYPE_INNER_L3_IPV4 |
                     (tcp ? RTE_PTYPE_INNER_L4_TCP : RTE_PTYPE_INNER_L4_UDP);
  } else {
    m->packet_type = RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4 | (tcp ? RTE_PTYPE_L4_TCP : RTE_PTYPE_L4_UDP);
  }
  m->l2_len = sizeof(wire::EthernetHeader);
  m->l3_len = o.l3_len;
  m->l4_len = o.l4_len;
  if (o.gso != Segmentation::None) {
    m->ol_flags |= RTE_MBUF_F_RX_LRO;
    m->tso_segsz = o.gso_size;
  }
}

namespace offload_detail {
inline bool rx_pending(std::uint64_t f) {
  return (f & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_NONE;
}
// TX flags of a packet with a pending checksum (and maybe segmentation) and L4 `tcp`.
inline std::uint64_t pending_tx_flags(std::uint64_t rx, bool tcp) {
  std::uint64_t tx = RTE_MBUF_F_TX_IPV4 | (tcp ? RTE_MBUF_F_TX_TCP_CKSUM : RTE_MBUF_F_TX_UDP_CKSUM);
  if (rx & RTE_MBUF_F_RX_LRO) tx |= tcp ? RTE_MBUF_F_TX_TCP_SEG : RTE_MBUF_F_TX_UDP_SEG;
  return tx;
}
}  // namespace offload_detail

// The pipeline's side. A pod's packet leaving behind VXLAN headers: its pending work now
// lies behind the outer headers.
[[gnu::always_inline]] inline void encap_offload(rte_mbuf* m) {
  const std::uint64_t rx = m->ol_flags;
  if (!offload_detail::rx_pending(rx)) [[likely]] {
    m->ol_flags = 0;  // complete (or verified: a complete checksum needs nothing)
    return;
  }
  const bool tcp = (m->packet_type & RTE_PTYPE_L4_MASK) == RTE_PTYPE_L4_TCP;
  m->ol_flags = offload_detail::pending_tx_flags(rx, tcp) | RTE_MBUF_F_TX_TUNNEL_VXLAN | RTE_MBUF_F_TX_OUTER_IPV4;
  m->outer_l2_len = kOuterL2Len;
  m->outer_l3_len = kOuterL3Len;
  m->l2_len = kTunnelL2Len;
}

// A pod's packet delivered to a pod of this node as it is.
[[gnu::always_inline]] inline void local_offload(rte_mbuf* m) {
  const std::uint64_t rx = m->ol_flags;
  if (!offload_detail::rx_pending(rx)) [[likely]] {
    m->ol_flags = rx & RTE_MBUF_F_RX_L4_CKSUM_GOOD;
    return;
  }
  const bool tcp = (m->packet_type & RTE_PTYPE_L4_MASK) == RTE_PTYPE_L4_TCP;
  m->ol_flags = offload_detail::pending_tx_flags(rx, tcp);
}

// A VXLAN frame's inner packet, decapsulated, for a pod.
[[gnu::always_inline]] inline void decap_offload(rte_mbuf* m) {
  const std::uint64_t rx = m->ol_flags;
  if (!offload_detail::rx_pending(rx)) [[likely]] {
    m->ol_flags = 0;
    return;
  }
  const bool tcp = (m->packet_type & RTE_PTYPE_INNER_L4_MASK) == RTE_PTYPE_INNER_L4_TCP;
  m->ol_flags = offload_detail::pending_tx_flags(rx & ~RTE_MBUF_F_RX_LRO, tcp);
  m->packet_type = RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4 | (tcp ? RTE_PTYPE_L4_TCP : RTE_PTYPE_L4_UDP);
}

// Whether a pod's super-packet's segments fit in `mtu` (IPv4 bytes).
[[gnu::always_inline]] inline bool gso_segments_fit(const rte_mbuf* m, std::uint32_t mtu) {
  return (m->ol_flags & RTE_MBUF_F_RX_LRO) &&
         static_cast<std::uint32_t>(m->l3_len + m->l4_len + m->tso_segsz) <= mtu;
}

// ---- for the senders ----
inline bool tx_encapsulated(const rte_mbuf* m) { return (m->ol_flags & RTE_MBUF_F_TX_TUNNEL_MASK) != 0; }
inline bool tx_tcp(const rte_mbuf* m) { return (m->ol_flags & RTE_MBUF_F_TX_L4_MASK) == RTE_MBUF_F_TX_TCP_CKSUM; }
// Where the pending L4 checksum's header starts, from the frame's start.
inline std::uint32_t tx_l4_offset(const rte_mbuf* m) {
  return static_cast<std::uint32_t>((tx_encapsulated(m) ? m->outer_l2_len + m->outer_l3_len : 0) + m->l2_len + m->l3_len);
}
inline SegmentLayout segment_layout(const rte_mbuf* m) {
  SegmentLayout l;
  l.outer = tx_encapsulated(m);
  l.l3_offset = static_cast<std::uint16_t>((l.outer ? m->outer_l2_len + m->outer_l3_len : 0) + m->l2_len);
  l.l3_len = m->l3_len;
  l.l4_len = m->l4_len;
  l.l4_proto = tx_tcp(m) ? 6 : 17;
  l.mss = m->tso_segsz;
  return l;
}

// The vnet header that hands m's pending work to the kernel as it is (a pod socket, or a
// super-packet's segment's checksum on the uplink socket: `segment` true leaves GSO out).
wire::VirtioNetHeader vnet_header_for(const rte_mbuf* m, bool segment = false);

// For a port that does none of it (a DPDK port, or the uplink socket's segments): a
// super-packet becomes its segments (new mbufs from `pool`: headers written, payload copied,
// every checksum complete), a pending checksum is finished in place. The packets to send in
// m's place go to out[0..); returns how many (m itself, or its segments, after which m is
// freed), 0 when out has no room for them (m untouched) or mbufs ran out (m freed; the
// caller counts mbuf_alloc_failed).
unsigned finish_offloads(rte_mbuf* m, rte_mempool* pool, rte_mbuf** out, unsigned room, bool* alloc_failed);

// Completes the pending L4 checksum of m in place (the field holds the pseudo-header sum).
void finish_l4_checksum(rte_mbuf* m);

}  // namespace vxfed::dataplane
