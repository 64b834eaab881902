// VXLAN header (RFC 7348), its Group Policy extension (VXLAN-GBP, draft-smith-vxlan-group-policy,
// what Linux's vxlan driver speaks with `gbp`), and the sizes of the whole outer encapsulation.
#pragma once

#include <cstdint>

#include "common/net/vxlan.hpp"
#include "dataplane/core/wire/byte_order.hpp"
#include "dataplane/core/wire/ethernet.hpp"
#include "dataplane/core/wire/ipv4.hpp"
#include "dataplane/core/wire/udp.hpp"

namespace vxfed::wire {

struct __attribute__((packed)) VxlanHeader {
  std::uint8_t flags;           // 0x08 (I bit: the VNI is valid), or 0x88 with G (Group Policy)
  // Reserved in plain VXLAN (sent as zero, ignored on receipt); with G set, VXLAN-GBP's
  // D and A bits and the 16-bit Group Policy ID.
  std::uint8_t gbp_flags;
  be16 group_policy_id_be;
  be32 vni_reserved_be;         // VNI in the high 24 bits, reserved low byte
};
static_assert(sizeof(VxlanHeader) == 8);

// VXLAN-GBP: the G bit of the flags byte says the next three bytes are a Group Policy header.
// Only G|I is taken with it (G without I, or any other flag, is bad_vxlan_flags).
constexpr std::uint8_t kVxlanFlagGroupPolicy = 0x80;
constexpr std::uint8_t kVxlanFlagsGroupPolicyVni = kVxlanFlagGroupPolicy | 0x08;
// The bits of gbp_flags: D (the receiver must not learn the source from this packet) and A
// (policy was already applied to this packet on the way). The others are reserved: must be 0.
constexpr std::uint8_t kVxlanGbpDontLearn = 0x40;
constexpr std::uint8_t kVxlanGbpPolicyApplied = 0x08;
constexpr std::uint8_t kVxlanGbpReservedBits = static_cast<std::uint8_t>(~(kVxlanGbpDontLearn | kVxlanGbpPolicyApplied));

// The numbers every part shares (common/net/vxlan.hpp), under their wire names.
using net::kVniMax;
using net::kVxlanFlagsVni;
using net::kVxlanUdpPort;

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
// The headers in front of the inner frame (outer Ethernet + IPv4 + UDP + VXLAN) and what the
// encapsulation adds to the pod's IP packet (outer IPv4 + UDP + VXLAN + inner Ethernet, the
// MTU rule, net::kVxlanOverhead) count one Ethernet header each way: the same 50 bytes.
static_assert(kVxlanOverhead == net::kVxlanOverhead);

// Outer UDP source port: 49152 + flow hash mod 16384 (RFC 7348 section 5 entropy).
constexpr std::uint16_t kVxlanSrcPortBase = 49152;
constexpr std::uint16_t kVxlanSrcPortRange = 16384;

}  // namespace vxfed::wire
