#include "dataplane/core/uplink_super.hpp"

#include <cstring>

#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/segment.hpp"
#include "dataplane/core/wire/ethernet.hpp"
#include "dataplane/core/wire/ipv4.hpp"
#include "dataplane/core/wire/tcp.hpp"
#include "dataplane/core/wire/udp.hpp"
#include "dataplane/core/wire/vxlan.hpp"

namespace vxfed::dataplane {

namespace {

using namespace vxfed::wire;

constexpr std::uint32_t kIp = sizeof(EthernetHeader);
constexpr std::uint32_t kUdp = kIp + sizeof(Ipv4Header);  // parse_uplink_super took no options
constexpr std::uint32_t kOuter = kUdp + sizeof(UdpHeader);

std::uint16_t get16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }
void put16(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

// The inner packet of the VXLAN frame p (len bytes): when it is a whole IPv4 TCP or UDP packet
// whose checksum is right, its field goes back to the pseudo-header sum and the mbuf is marked
// pending (set_rx_offload). Anything else is left as it is.
void hand_on_verified_checksum(rte_mbuf* m, std::uint8_t* p, std::uint32_t len) {
  const std::uint32_t eth = kOuter + sizeof(VxlanHeader);
  const std::uint32_t ip = eth + sizeof(EthernetHeader);
  if (ip + sizeof(Ipv4Header) > len || get16(p + eth + offsetof(EthernetHeader, ether_type_be)) != kEtherTypeIpv4)
    return;
  const std::uint32_t ihl = (p[ip] & 0x0f) * 4u;
  const std::uint32_t total = get16(p + ip + offsetof(Ipv4Header, total_length_be));
  const std::uint8_t proto = p[ip + offsetof(Ipv4Header, protocol)];
  if ((p[ip] >> 4) != 4 || ihl < sizeof(Ipv4Header) || total < ihl || ip + total > len) return;
  if (get16(p + ip + offsetof(Ipv4Header, fragment_be)) & (kIpv4FlagMf | kIpv4OffsetMask)) return;
  const std::uint32_t l4 = ip + ihl, l4_total = total - ihl;
  std::uint32_t l4_header = 0, field = 0;
  if (proto == kIpProtoTcp && l4_total >= sizeof(TcpHeader)) {
    l4_header = (p[l4 + offsetof(TcpHeader, data_offset)] >> 4) * 4u;
    field = kTcpChecksumOffset;
    if (l4_header < sizeof(TcpHeader) || l4_header > l4_total) return;
  } else if (proto == kIpProtoUdp && l4_total >= sizeof(UdpHeader)) {
    l4_header = sizeof(UdpHeader);
    field = kUdpChecksumOffset;
    if (get16(p + l4 + field) == 0) return;  // sent without a checksum
  } else {
    return;
  }
  const std::uint16_t pseudo = pseudo_header_sum(p + ip + offsetof(Ipv4Header, src_be), proto, l4_total);
  OnesSum sum;
  sum.add_word(pseudo);
  sum.add(p + l4, l4_total);
  if (sum.folded() != 0xffff) return;  // wrong: the pod's kernel drops it and counts it
  put16(p + l4 + field, pseudo);
  FrameOffload o;
  o.checksum = L4Checksum::Partial;
  o.l4_proto = proto;
  o.l3_offset = static_cast<std::uint16_t>(ip);
  o.l3_len = static_cast<std::uint16_t>(ihl);
  o.l4_len = static_cast<std::uint16_t>(l4_header);
  o.encapsulated = true;
  set_rx_offload(m, o);
}

}  // namespace

SplitResult split_uplink_super(rte_mbuf* m, const UplinkSuperPacket& s, rte_mempool* pool, rte_mbuf** out,
                               unsigned* count) {
  *count = 0;
  const std::uint32_t n = (s.payload_len + s.gso_size - 1) / s.gso_size;
  if (n == 0 || n > kMaxUplinkSuperDatagrams || m->data_len < kOuter ||
      kOuter + s.gso_size > std::uint32_t{rte_pktmbuf_data_room_size(pool)} - RTE_PKTMBUF_HEADROOM) {
    rte_pktmbuf_free(m);
    return SplitResult::Refused;
  }
  if (rte_pktmbuf_alloc_bulk(pool, out, n) != 0) {
    rte_pktmbuf_free(m);
    return SplitResult::NoMbufs;
  }
  const auto* super = rte_pktmbuf_mtod(m, const std::uint8_t*);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t len = std::min<std::uint32_t>(s.gso_size, s.payload_len - i * s.gso_size);
    rte_mbuf* f = out[i];
    auto* p = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(f, static_cast<std::uint16_t>(kOuter + len)));
    std::memcpy(p, super, kOuter);
    put16(p + kIp + offsetof(Ipv4Header, total_length_be), sizeof(Ipv4Header) + sizeof(UdpHeader) + len);
    put16(p + kIp + offsetof(Ipv4Header, id_be), get16(p + kIp + offsetof(Ipv4Header, id_be)) + i);
    put16(p + kIp + offsetof(Ipv4Header, checksum_be), ipv4_header_checksum(p + kIp, sizeof(Ipv4Header)));
    put16(p + kUdp + offsetof(UdpHeader, length_be), sizeof(UdpHeader) + len);
    put16(p + kUdp + kUdpChecksumOffset, 0);
    // The datagram's bytes, wherever the chain holds them.
    const std::uint32_t from = kOuter + i * s.gso_size;
    const void* src = rte_pktmbuf_read(m, from, len, p + kOuter);
    if (src != p + kOuter) std::memcpy(p + kOuter, src, len);
    hand_on_verified_checksum(f, p, kOuter + len);
  }
  rte_pktmbuf_free(m);
  *count = n;
  return SplitResult::Done;
}

}  // namespace vxfed::dataplane
