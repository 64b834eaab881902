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

// The inner packet of the VXLAN frame p (len bytes): when it is a whole IPv4 TCP or UDP packet
// whose checksum is right, its field goes back to the pseudo-header sum and the mbuf is marked
// pending (set_rx_offload). Anything else is left as it is.
void hand_on_verified_checksum(rte_mbuf* m, std::uint8_t* p, std::uint32_t len) {
  const std::uint32_t eth = kOuter + sizeof(VxlanHeader);
  FrameOffload o;
  std::uint32_t ip_end = 0;
  if (eth + sizeof(EthernetHeader) > len || load_be16(p + eth + offsetof(EthernetHeader, ether_type_be)) != kEtherTypeIpv4 ||
      !locate_ipv4_l4(ByteSpan(p, len), len, eth + sizeof(EthernetHeader), o, &ip_end))
    return;
  const std::uint32_t l4 = o.l3_offset + o.l3_len, l4_total = ip_end - l4;
  const std::uint32_t field = o.l4_proto == kIpProtoTcp ? kTcpChecksumOffset : kUdpChecksumOffset;
  if (o.l4_proto == kIpProtoUdp && load_be16(p + l4 + field) == 0) return;  // sent without a checksum
  const std::uint16_t pseudo = pseudo_header_sum(p + o.l3_offset + offsetof(Ipv4Header, src_be), o.l4_proto, l4_total);
  OnesSum sum;
  sum.add_word(pseudo);
  sum.add(p + l4, l4_total);
  if (sum.folded() != 0xffff) return;  // wrong: the pod's kernel drops it and counts it
  store_be16(p + l4 + field, pseudo);
  o.checksum = L4Checksum::Partial;
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
    store_be16(p + kIp + offsetof(Ipv4Header, total_length_be), sizeof(Ipv4Header) + sizeof(UdpHeader) + len);
    store_be16(p + kIp + offsetof(Ipv4Header, id_be), load_be16(p + kIp + offsetof(Ipv4Header, id_be)) + i);
    store_be16(p + kIp + offsetof(Ipv4Header, checksum_be), ipv4_header_checksum(p + kIp, sizeof(Ipv4Header)));
    store_be16(p + kUdp + offsetof(UdpHeader, length_be), sizeof(UdpHeader) + len);
    store_be16(p + kUdp + kUdpChecksumOffset, 0);
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
