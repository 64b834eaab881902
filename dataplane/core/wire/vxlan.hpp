// VXLAN header (RFC 7348) and the sizes of the whole outer encapsulation.
#pragma once

#include <cstdint>

#include "dataplane/core/wire/byte_order.hpp"
#include "dataplane/core/wire/ethernet.hpp"
#include "dataplane/core/wire/ipv4.hpp"
#include "dataplane/core/wire/udp.hpp"

namespace vxfed::wire {

struct __attribute__((packed)) VxlanHeader {
  std::uint8_t flags;           // must be 0x08 (I bit: the VNI is valid)
  std::uint8_t reserved1[3];
  be32 vni_reserved_be;         // VNI in the high 24 bits, reserved low byte
};
static_assert(sizeof(VxlanHeader) == 8);

constexpr std::uint8_t kVxlanFlagsVni = 0x08;
constexpr std::uint16_t kVxlanUdpPort = 4789;
constexpr std::uint32_t kVniMax = 0xffffff;

inline std::uint32_t vxlan_vni(const VxlanHeader& h) { return from_be32(h.vni_reserved_be) >> 8; }
constexpr be32 vxlan_vni_field(std::uint32_t vni) { return to_be32(vni << 8); }

// The outer headers in front of every inner frame, as one packed block (50 bytes).
struct __attribute__((packed)) VxlanOuterHeaders {
  EthernetHeader eth;
  Ipv4Header ip;
  UdpHeader udp;
  VxlanHeader vxlan;
};
static_assert(sizeof(VxlanOuterHeaders) == 50);

constexpr std::uint32_t kVxlanOverhead = sizeof(VxlanOuterHeaders);
// Bytes the encapsulation adds to the IP packet size (outer IPv4+UDP+VXLAN+inner Ethernet):
// the pod MTU is the underlay MTU minus this.
constexpr std::uint32_t kVxlanMtuOverhead = 50;

// Outer UDP source port: 49152 + flow hash mod 16384 (RFC 7348 section 5 entropy).
constexpr std::uint16_t kVxlanSrcPortBase = 49152;
constexpr std::uint16_t kVxlanSrcPortRange = 16384;

}  // namespace vxfed::wire
