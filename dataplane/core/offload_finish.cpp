// What the senders do with a packet's pending checksum and segmentation (mbuf_offload.hpp):
// describe it to the kernel in a vnet header, or do it here for a port that cannot.
#include <cstring>

#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/wire/tcp.hpp"

namespace vxfed::dataplane {

namespace {

using namespace vxfed::wire;

// One's-complement sum of m's bytes [off, off + len), across segments.
void sum_range(const rte_mbuf* m, std::uint32_t off, std::uint32_t len, OnesSum& sum) {
  for (; m != nullptr && len > 0; m = m->next) {
    if (off >= m->data_len) {
      off -= m->data_len;
      continue;
    }
    const std::uint32_t take = std::min<std::uint32_t>(m->data_len - off, len);
    sum.add(rte_pktmbuf_mtod_offset(m, const std::uint8_t*, off), take);
    len -= take;
    off = 0;
  }
}

// Copies m's bytes [off, off + len) to dst.
void copy_range(const rte_mbuf* m, std::uint32_t off, std::uint32_t len, std::uint8_t* dst) {
  for (; m != nullptr && len > 0; m = m->next) {
    if (off >= m->data_len) {
      off -= m->data_len;
      continue;
    }
    const std::uint32_t take = std::min<std::uint32_t>(m->data_len - off, len);
    std::memcpy(dst, rte_pktmbuf_mtod_offset(m, const std::uint8_t*, off), take);
    dst += take;
    len -= take;
    off = 0;
  }
}

// Completes the checksum of the contiguous L4 packet at p (len bytes) whose field, at
// field_off, holds the pseudo-header sum.
void complete_contiguous(std::uint8_t* p, std::uint32_t len, std::uint32_t field_off, bool udp) {
  OnesSum s;
  s.add(p, len);
  store_l4_checksum(p + field_off, s, udp);
}

}  // namespace

VirtioNetHeader vnet_header_for(const rte_mbuf* m, bool segment) {
  VirtioNetHeader h{};
  const std::uint64_t f = m->ol_flags;
  if (!(f & kTxCsumFlags)) return h;
  const bool tcp = tx_tcp(m);
  h.flags = kVnetNeedsCsum;
  h.csum_start = static_cast<std::uint16_t>(tx_l4_offset(m));
  h.csum_offset = static_cast<std::uint16_t>(tcp ? kTcpChecksumOffset : kUdpChecksumOffset);
  h.hdr_len = static_cast<std::uint16_t>(h.csum_start + m->l4_len);
  if (segment || !(f & kTxSegFlags)) return h;
  h.gso_size = m->tso_segsz;
  if (tcp) {
    const auto* th = rte_pktmbuf_mtod_offset(m, const std::uint8_t*, h.csum_start);
    h.gso_type = static_cast<std::uint8_t>(kVnetGsoTcpv4 | ((th[13] & kTcpCwr) ? kVnetGsoEcn : 0));
  } else {
    h.gso_type = kVnetGsoUdpL4;
  }
  return h;
}

void finish_l4_checksum(rte_mbuf* m) {
  const std::uint32_t l4 = tx_l4_offset(m);
  const bool udp = !tx_tcp(m);
  const std::uint32_t field = l4 + (udp ? kUdpChecksumOffset : kTcpChecksumOffset);
  if (m->nb_segs == 1) {
    complete_contiguous(rte_pktmbuf_mtod(m, std::uint8_t*) + l4, m->pkt_len - l4, field - l4, udp);
  } else {
    OnesSum s;
    sum_range(m, l4, m->pkt_len - l4, s);
    store_l4_checksum(rte_pktmbuf_mtod_offset(m, std::uint8_t*, field), s, udp);  // headers: in the first segment
  }
  m->ol_flags &= ~(kTxCsumFlags | RTE_MBUF_F_TX_IPV4);
}

unsigned finish_offloads(rte_mbuf* m, rte_mempool* pool, rte_mbuf** out, unsigned room, bool* alloc_failed) {
  *alloc_failed = false;
  const std::uint64_t f = m->ol_flags;
  if (!(f & kTxSegFlags)) {
    if (room == 0) return 0;
    if (f & kTxCsumFlags) finish_l4_checksum(m);
    m->ol_flags = f & RTE_MBUF_F_TX_VLAN;  // the underlay tag is still the port's to insert
    out[0] = m;
    return 1;
  }
  const SegmentLayout l = segment_layout(m);
  const std::uint32_t n = segment_count(l, m->pkt_len);
  if (n > room) return 0;
  if (rte_pktmbuf_alloc_bulk(pool, out, n) != 0) {
    rte_pktmbuf_free(m);
    *alloc_failed = true;
    return 0;
  }
  const std::uint32_t hdrs = l.headers();
  const auto* super = rte_pktmbuf_mtod(m, const std::uint8_t*);
  const bool udp = l.l4_proto != 6;
  for (std::uint32_t i = 0; i < n; ++i) {
    rte_mbuf* s = out[i];
    const std::uint32_t payload = std::min<std::uint32_t>(l.mss, m->pkt_len - hdrs - std::min(m->pkt_len - hdrs, i * l.mss));
    auto* p = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(s, static_cast<std::uint16_t>(hdrs + payload)));
    if (p == nullptr) {  // the pool's mbufs are smaller than a segment: cannot happen with one pool
      rte_pktmbuf_free_bulk(out, n);
      rte_pktmbuf_free(m);
      *alloc_failed = true;
      return 0;
    }
    s->ol_flags = f & RTE_MBUF_F_TX_VLAN;
    s->vlan_tci = m->vlan_tci;
    write_segment_headers(l, super, m->pkt_len, i, p);
    copy_range(m, hdrs + i * l.mss, payload, p + hdrs);
    complete_contiguous(p + l.l4_offset(), l.l4_len + payload, udp ? kUdpChecksumOffset : kTcpChecksumOffset, udp);
  }
  rte_pktmbuf_free(m);
  return n;
}

}  // namespace vxfed::dataplane
