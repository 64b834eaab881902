#include "dataplane/core/vnet_parse.hpp"

#include <cstring>

#include "dataplane/core/wire/ethernet.hpp"
#include "dataplane/core/wire/ipv4.hpp"
#include "dataplane/core/wire/tcp.hpp"
#include "dataplane/core/wire/udp.hpp"
#include "dataplane/core/wire/vxlan.hpp"

namespace vxfed::dataplane {

namespace {

using namespace vxfed::wire;

constexpr std::uint8_t kKnownFlags = kVnetNeedsCsum | kVnetDataValid;


std::uint16_t ether_type_at(ByteSpan first, std::uint32_t off) {
  be16 t;
  std::memcpy(&t, first.data() + off + offsetof(EthernetHeader, ether_type_be), 2);
  return from_be16(t);
}

std::uint32_t checksum_offset_of(std::uint8_t proto) {
  return proto == kIpProtoTcp ? kTcpChecksumOffset : kUdpChecksumOffset;
}

VnetVerdict refused() { return VnetVerdict{false, DropReason::BadVnetHeader, {}}; }

}  // namespace

bool locate_ipv4_l4(ByteSpan first, std::uint32_t packet_len, std::uint32_t l3, FrameOffload& o, std::uint32_t* ip_end) {
  if (l3 + sizeof(Ipv4Header) > first.size()) return false;
  Ipv4Header ip;
  std::memcpy(&ip, first.data() + l3, sizeof ip);
  const std::uint32_t hlen = (ip.version_ihl & 0x0f) * 4u;
  const std::uint32_t total = from_be16(ip.total_length_be);
  if ((ip.version_ihl >> 4) != 4 || hlen < sizeof(Ipv4Header) || total < hlen || l3 + total > packet_len) return false;
  if (from_be16(ip.fragment_be) & (kIpv4FlagMf | kIpv4OffsetMask)) return false;
  const std::uint32_t l4 = l3 + hlen;
  std::uint32_t l4_len = 0;
  if (ip.protocol == kIpProtoTcp) {
    if (l4 + sizeof(TcpHeader) > first.size()) return false;
    TcpHeader th;
    std::memcpy(&th, first.data() + l4, sizeof th);
    l4_len = tcp_header_len(th);
    if (l4_len < sizeof(TcpHeader)) return false;
  } else if (ip.protocol == kIpProtoUdp) {
    l4_len = sizeof(UdpHeader);
  } else {
    return false;
  }
  if (l4 + l4_len > first.size() || hlen + l4_len > total) return false;
  o.l4_proto = ip.protocol;
  o.l3_offset = static_cast<std::uint16_t>(l3);
  o.l3_len = static_cast<std::uint16_t>(hlen);
  o.l4_len = static_cast<std::uint16_t>(l4_len);
  *ip_end = l3 + total;
  return true;
}

VnetVerdict parse_pod_vnet(const VirtioNetHeader& h, ByteSpan first, std::uint32_t packet_len) {
  VnetVerdict v;
  const std::uint8_t gso = h.gso_type & static_cast<std::uint8_t>(~kVnetGsoEcn);
  const bool ecn = (h.gso_type & kVnetGsoEcn) != 0;
  if ((h.flags & ~kKnownFlags) != 0 || h.flags == kKnownFlags) return refused();
  if (h.flags == 0 && h.gso_type == kVnetGsoNone) return v;  // the common small frame
  if (h.flags == kVnetDataValid && h.gso_type == kVnetGsoNone) {
    v.offload.checksum = L4Checksum::Verified;
    return v;
  }
  if (packet_len < first.size() || first.size() < sizeof(EthernetHeader)) return refused();
  if (ether_type_at(first, 0) != kEtherTypeIpv4) {
    // Not ours to describe (IPv6, ...): the pipeline drops it as not_ipv4, unless it claims
    // an IPv4 super-packet.
    if (gso == kVnetGsoTcpv4 || gso == kVnetGsoUdpL4 || gso == kVnetGsoUdp) return refused();
    return v;
  }
  if (gso != kVnetGsoNone && gso != kVnetGsoTcpv4 && gso != kVnetGsoUdpL4) return refused();
  if (ecn && gso != kVnetGsoTcpv4) return refused();
  // Both a pending checksum and a super-packet need the headers to be what they claim.
  if (!(h.flags & kVnetNeedsCsum)) return refused();  // GSO without NEEDS_CSUM, or DATA_VALID with GSO
  FrameOffload& o = v.offload;
  std::uint32_t ip_end = 0;
  if (!locate_ipv4_l4(first, packet_len, sizeof(EthernetHeader), o, &ip_end)) return refused();
  if (h.csum_start != o.l3_offset + o.l3_len || h.csum_offset != checksum_offset_of(o.l4_proto)) return refused();
  o.checksum = L4Checksum::Partial;
  if (gso == kVnetGsoNone) return v;
  if ((gso == kVnetGsoTcpv4) != (o.l4_proto == kIpProtoTcp)) return refused();
  if (ip_end != packet_len || h.gso_size == 0) return refused();
  if (std::uint32_t{o.l3_len} + o.l4_len + h.gso_size > 65535) return refused();
  o.gso = gso == kVnetGsoTcpv4 ? Segmentation::Tcp : Segmentation::Udp;
  o.gso_size = h.gso_size;
  return v;
}

VnetVerdict parse_uplink_vnet(const VirtioNetHeader& h, ByteSpan first, std::uint32_t packet_len) {
  VnetVerdict v;
  if ((h.flags & ~kKnownFlags) != 0 || h.flags == kKnownFlags) return refused();
  if (h.gso_type != kVnetGsoNone) return refused();
  if (!(h.flags & kVnetNeedsCsum)) return v;  // nothing pending (DATA_VALID: see the header)
  // Where would the checksums of a VXLAN frame be? Anything that does not parse as one is
  // left for the pipeline to drop for what it is.
  if (packet_len < first.size() || first.size() < sizeof(EthernetHeader) || ether_type_at(first, 0) != kEtherTypeIpv4)
    return v;
  FrameOffload outer;
  std::uint32_t outer_end = 0;
  if (!locate_ipv4_l4(first, packet_len, sizeof(EthernetHeader), outer, &outer_end) || outer.l4_proto != kIpProtoUdp)
    return v;
  const std::uint32_t udp = outer.l3_offset + outer.l3_len;
  be16 dport;
  std::memcpy(&dport, first.data() + udp + offsetof(UdpHeader, dst_port_be), 2);
  const std::uint32_t inner_eth = udp + sizeof(UdpHeader) + sizeof(VxlanHeader);
  if (from_be16(dport) != kVxlanUdpPort) return v;
  if (h.csum_start == udp && h.csum_offset == kUdpChecksumOffset) return v;  // the outer UDP's: stripped with it
  FrameOffload& o = v.offload;
  std::uint32_t inner_end = 0;
  if (inner_eth + sizeof(EthernetHeader) > first.size() || ether_type_at(first, inner_eth) != kEtherTypeIpv4 ||
      !locate_ipv4_l4(first, outer_end, inner_eth + sizeof(EthernetHeader), o, &inner_end))
    return refused();  // a pending checksum inside a VXLAN frame we cannot locate
  if (h.csum_start != o.l3_offset + o.l3_len || h.csum_offset != checksum_offset_of(o.l4_proto)) return refused();
  o.checksum = L4Checksum::Partial;
  o.encapsulated = true;
  return v;
}

UplinkSuperPacket parse_uplink_super(const VirtioNetHeader& h, ByteSpan first, std::uint32_t packet_len) {
  UplinkSuperPacket s;
  if (h.gso_type != kVnetGsoUdpL4 || h.flags != kVnetNeedsCsum) return s;
  if (packet_len < first.size() || first.size() < sizeof(EthernetHeader) || ether_type_at(first, 0) != kEtherTypeIpv4)
    return s;
  FrameOffload outer;
  std::uint32_t outer_end = 0;
  if (!locate_ipv4_l4(first, packet_len, sizeof(EthernetHeader), outer, &outer_end) || outer.l4_proto != kIpProtoUdp ||
      outer.l3_len != sizeof(Ipv4Header) || outer_end != packet_len)
    return s;
  const std::uint32_t udp = outer.l3_offset + outer.l3_len;
  if (h.csum_start != udp || h.csum_offset != kUdpChecksumOffset) return s;
  UdpHeader uh;
  std::memcpy(&uh, first.data() + udp, sizeof uh);
  const std::uint32_t payload = packet_len - udp - sizeof(UdpHeader);
  if (from_be16(uh.dst_port_be) != kVxlanUdpPort || from_be16(uh.length_be) != sizeof(UdpHeader) + payload) return s;
  if (h.gso_size < sizeof(VxlanHeader) + sizeof(EthernetHeader) + sizeof(Ipv4Header)) return s;
  s.ok = true;
  s.gso_size = h.gso_size;
  s.payload_len = payload;
  return s;
}

}  // namespace vxfed::dataplane
