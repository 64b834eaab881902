#include "dataplane/core/icmp_parse.hpp"

#include <cstring>

#include "dataplane/core/wire/byte_order.hpp"
#include "dataplane/core/wire/icmp.hpp"
#include "dataplane/core/wire/ipv4.hpp"
#include "dataplane/core/wire/vxlan.hpp"

namespace vxfed::dataplane {

namespace {

constexpr std::uint32_t kEthernet = 14;

std::uint16_t be16_at(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }
std::uint32_t raw32_at(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // network order, as the tables keep addresses
}

}  // namespace

UnderlayIcmp parse_underlay_icmp(std::span<const std::uint8_t> first, std::uint32_t packet_len,
                                 std::uint32_t local_vtep_ip_be) {
  UnderlayIcmp out;
  const std::uint32_t have = static_cast<std::uint32_t>(first.size()) < packet_len ? static_cast<std::uint32_t>(first.size())
                                                                               : packet_len;
  const std::uint8_t* p = first.data();
  if (have < kEthernet + 20 || be16_at(p + 12) != wire::kEtherTypeIpv4) return out;
  const std::uint8_t* ip = p + kEthernet;
  if ((ip[0] >> 4) != 4 || ip[9] != wire::kIpProtoIcmp) return out;
  out.kind = UnderlayIcmp::Kind::Ignored;
  const std::uint32_t ihl = (ip[0] & 0x0fu) * 4;
  const std::uint32_t total = be16_at(ip + 2);
  // The whole message in the first segment: it is small (a header and 28+ quoted bytes).
  if (ihl < 20 || total < ihl + 8 || kEthernet + total > have) return out;
  if (wire::ipv4_checksum(ip, ihl) != 0) return out;
  if (raw32_at(ip + 16) != local_vtep_ip_be) return out;
  if (be16_at(ip + 6) & (wire::kIpv4FlagMf | wire::kIpv4OffsetMask)) return out;
  const std::uint8_t* icmp = ip + ihl;
  const std::uint32_t icmp_len = total - ihl;
  if (icmp[0] != wire::kIcmpDestUnreachable || icmp[1] != wire::kIcmpCodeFragNeeded) return out;
  if (wire::ipv4_checksum(icmp, icmp_len) != 0) return out;
  const std::uint16_t mtu = be16_at(icmp + 6);
  // The quoted packet: our own outer IPv4 header and the 8 bytes of its UDP header.
  const std::uint8_t* q = icmp + 8;
  const std::uint32_t quoted = icmp_len - 8;
  if (quoted < 20 || (q[0] >> 4) != 4) return out;
  const std::uint32_t q_ihl = (q[0] & 0x0fu) * 4;
  if (q_ihl < 20 || quoted < q_ihl + 8) return out;
  if (q[9] != wire::kIpProtoUdp || raw32_at(q + 12) != local_vtep_ip_be) return out;
  if (be16_at(q + q_ihl + 2) != wire::kVxlanUdpPort) return out;
  if (mtu == 0) return out;
  out.kind = UnderlayIcmp::Kind::FragNeeded;
  out.vtep_ip_be = raw32_at(q + 16);
  out.mtu = mtu;
  return out;
}

}  // namespace vxfed::dataplane
