// VXLAN as vxfed uses it (RFC 7348): the numbers every part agrees on, and the per-VNI
// gateway MAC rule. Header-only constants, no I/O. The packet layout itself lives with the
// forwarder (dataplane/core/wire/vxlan.hpp).
#pragma once

#include <cstdint>

#include "common/net/mac.hpp"

namespace vxfed::net {

constexpr std::uint16_t kVxlanUdpPort = 4789;  // IANA-assigned destination port
constexpr std::uint8_t kVxlanFlagsVni = 0x08;   // flags byte: only the I bit (the VNI is valid)
constexpr std::uint32_t kVniMax = 0xffffff;     // the VNI field is 24 bits

// Bytes the encapsulation adds to a pod's IP packet on the underlay: outer IPv4 (20) + UDP (8)
// + VXLAN (8) + the inner Ethernet header (14) that now rides inside the packet.
constexpr std::uint32_t kVxlanOverhead = 20 + 8 + 8 + 14;
static_assert(kVxlanOverhead == 50);

// The largest pod MTU an underlay MTU carries without fragmenting the outer packet.
constexpr std::uint32_t pod_mtu(std::uint32_t underlay_mtu) { return underlay_mtu - kVxlanOverhead; }

// The MAC the dataplane answers ARP for with a network's gateway address: locally
// administered, unicast (02:76:78 = 'v' 'x' in the low two bytes of the OUI), then the 24-bit
// VNI, so it is the same on every node and after every restart without being stored.
constexpr Mac gateway_mac(std::uint32_t vni) {
  return Mac{0x02, 0x76, 0x78, static_cast<std::uint8_t>(vni >> 16), static_cast<std::uint8_t>(vni >> 8),
             static_cast<std::uint8_t>(vni)};
}

}  // namespace vxfed::net
