#include "dataplane/core/coalesce.hpp"

#include <cstring>

#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/segment.hpp"
#include "dataplane/core/wire/ethernet.hpp"
#include "dataplane/core/wire/ipv4.hpp"
#include "dataplane/core/wire/tcp.hpp"

namespace vxfed::dataplane {

namespace {

using namespace vxfed::wire;

constexpr std::uint32_t kIp = sizeof(EthernetHeader);
constexpr std::uint32_t kTcp = kIp + sizeof(Ipv4Header);
constexpr std::uint16_t kMaxChain = 64;
constexpr std::uint32_t kMaxIpTotal = 65535;

// The parts of a segment the run's next segment is compared with, read once.
struct Segment {
  const std::uint8_t* p = nullptr;  // frame
  std::uint32_t tcp_len = 0;        // TCP header bytes
  std::uint32_t payload = 0;
  std::uint32_t seq = 0;
  std::uint8_t flags = 0;
};

// Whether m can take part at all, and its fields.
bool eligible(const rte_mbuf* m, Segment& s) {
  if ((m->ol_flags & (kTxPendingFlags | RTE_MBUF_F_TX_TUNNEL_MASK)) != RTE_MBUF_F_TX_TCP_CKSUM) return false;
  if (m->l2_len != kIp || m->l3_len != sizeof(Ipv4Header)) return false;
  const std::uint32_t tcp_len = m->l4_len;
  if (tcp_len < sizeof(TcpHeader) || m->data_len < kTcp + tcp_len) return false;
  const auto* p = rte_pktmbuf_mtod(m, const std::uint8_t*);
  const std::uint32_t total = std::uint32_t{p[kIp + 2]} << 8 | p[kIp + 3];
  if (p[kIp] != 0x45 || kIp + total != m->pkt_len || total < sizeof(Ipv4Header) + tcp_len) return false;
  s.p = p;
  s.tcp_len = tcp_len;
  s.payload = total - sizeof(Ipv4Header) - tcp_len;
  s.seq = load_be32(p + kTcp + offsetof(TcpHeader, seq_be));
  s.flags = p[kTcp + offsetof(TcpHeader, flags)];
  return true;
}

// Whether b continues the run of head (its first segment h, next sequence number `next`).
bool continues(const Segment& h, std::uint32_t next, const Segment& b) {
  const std::uint8_t* x = h.p + kIp;
  const std::uint8_t* y = b.p + kIp;
  // TOS (1), fragment flags (6-7), TTL and protocol (8-9), addresses (12-19).
  if (x[1] != y[1] || std::memcmp(x + 6, y + 6, 4) != 0 || std::memcmp(x + 12, y + 12, 8) != 0) return false;
  if (b.tcp_len != h.tcp_len || b.seq != next || b.payload == 0 || b.payload > h.payload) return false;
  if ((b.flags & ~(kTcpPsh | kTcpFin)) != kTcpAck) return false;
  const std::uint8_t* tx = h.p + kTcp;
  const std::uint8_t* ty = b.p + kTcp;
  // Ports (0-3), ACK number (8-11), window (14-15), options (20-).
  return std::memcmp(tx, ty, 4) == 0 && std::memcmp(tx + 8, ty + 8, 4) == 0 && std::memcmp(tx + 14, ty + 14, 2) == 0 &&
         std::memcmp(tx + sizeof(TcpHeader), ty + sizeof(TcpHeader), h.tcp_len - sizeof(TcpHeader)) == 0;
}

// The run's head after its last merge: headers for the whole.
void close_run(rte_mbuf* head, const Segment& h, std::uint8_t last_flags) {
  auto* p = rte_pktmbuf_mtod(head, std::uint8_t*);
  const std::uint32_t total = head->pkt_len - kIp;
  p[kIp + 2] = static_cast<std::uint8_t>(total >> 8);
  p[kIp + 3] = static_cast<std::uint8_t>(total);
  const std::uint16_t ipc = ipv4_header_checksum(p + kIp, sizeof(Ipv4Header));
  p[kIp + 10] = static_cast<std::uint8_t>(ipc >> 8);
  p[kIp + 11] = static_cast<std::uint8_t>(ipc);
  p[kTcp + offsetof(TcpHeader, flags)] = static_cast<std::uint8_t>(kTcpAck | (last_flags & (kTcpPsh | kTcpFin)));
  const std::uint16_t pseudo = pseudo_header_sum(p + kIp + 12, 6, total - sizeof(Ipv4Header));
  p[kTcp + kTcpChecksumOffset] = static_cast<std::uint8_t>(pseudo >> 8);
  p[kTcp + kTcpChecksumOffset + 1] = static_cast<std::uint8_t>(pseudo);
  head->ol_flags |= RTE_MBUF_F_TX_TCP_SEG;
  head->tso_segsz = static_cast<std::uint16_t>(h.payload);
}

}  // namespace

std::uint16_t coalesce_tcp_segments(rte_mbuf** pkts, std::uint16_t n) {
  std::uint16_t out = 0;
  std::uint16_t i = 0;
  while (i < n) {
    rte_mbuf* head = pkts[i++];
    pkts[out++] = head;
    Segment h;
    if (!eligible(head, h) || h.payload == 0 || h.flags != kTcpAck) continue;
    std::uint32_t next = h.seq + h.payload;
    std::uint8_t last_flags = h.flags;
    std::uint16_t merged = 0;
    while (i < n) {
      Segment b;
      rte_mbuf* m = pkts[i];
      if (!eligible(m, b) || !continues(h, next, b)) break;
      if (head->pkt_len + b.payload - kIp > kMaxIpTotal || head->nb_segs + m->nb_segs > kMaxChain) break;
      rte_pktmbuf_adj(m, static_cast<std::uint16_t>(kTcp + b.tcp_len));
      m->ol_flags = 0;
      if (rte_pktmbuf_chain(head, m) != 0) {  // cannot happen below kMaxChain; keep it whole
        rte_pktmbuf_prepend(m, static_cast<std::uint16_t>(kTcp + b.tcp_len));
        break;
      }
      ++i;
      ++merged;
      next += b.payload;
      last_flags = b.flags;
      if (b.flags != kTcpAck || b.payload < h.payload) break;  // PSH, FIN or a short one ends it
    }
    if (merged) close_run(head, h, last_flags);
  }
  return out;
}

}  // namespace vxfed::dataplane
