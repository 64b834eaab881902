// The flow hash: one function for the outer UDP source port (underlay ECMP/RSS entropy), ECMP
// choice among VTEPs, and software RSS in the runtime. Same 5-tuple, same hash, always, so a
// flow keeps one path and its order. Not symmetric (each direction is its own flow).
#pragma once

#include <cstdint>

namespace vxfed::dataplane {

// Addresses and ports as they sit in the packet (network order): hashing does not need host
// order, and skipping the byte swaps saves cycles. Ports are 0 for non-TCP/UDP and fragments.
// `ports` = (src_port_be << 16) | dst_port_be.
inline std::uint32_t flow_hash_ports(std::uint32_t src_ip_be, std::uint32_t dst_ip_be,
                                     std::uint8_t protocol, std::uint32_t ports) {
  std::uint64_t a = (static_cast<std::uint64_t>(src_ip_be) << 32) | dst_ip_be;
  std::uint64_t b = (static_cast<std::uint64_t>(protocol) << 32) | ports;
  // Two multiply-xorshift rounds (murmur3 finaliser constants): cheap and well mixed.
  std::uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return static_cast<std::uint32_t>(h);
}

inline std::uint32_t flow_hash(std::uint32_t src_ip_be, std::uint32_t dst_ip_be,
                               std::uint8_t protocol, std::uint16_t src_port_be,
                               std::uint16_t dst_port_be) {
  return flow_hash_ports(src_ip_be, dst_ip_be, protocol,
                         (static_cast<std::uint32_t>(src_port_be) << 16) | dst_port_be);
}

// Outer UDP source port for a flow hash: 49152 + hash mod 16384.
constexpr std::uint16_t vxlan_src_port(std::uint32_t hash) {
  return static_cast<std::uint16_t>(49152u + (hash & 16383u));
}

}  // namespace vxfed::dataplane
