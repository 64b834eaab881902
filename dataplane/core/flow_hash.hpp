// The flow hash: one function for the outer UDP source port (underlay ECMP/RSS entropy), ECMP
// choice among VTEPs, and software RSS in the runtime. Same 5-tuple, same hash, always, so a
// flow keeps one path and its order. Not symmetric (each direction is its own flow).
#pragma once

#include <cstdint>

namespace vxfed::dataplane {

constexpr std::uint32_t kFlowHashSeed = 0x9e3779b9;  // any non-zero start: all-zero tuples differ

// Addresses and ports as they sit in the packet (network order): hashing does not need host
// order, and skipping the byte swaps saves cycles. Ports are 0 for non-TCP/UDP and fragments.
// `ports` = (src_port_be << 16) | dst_port_be.
inline std::uint32_t flow_hash_ports(std::uint32_t src_ip_be, std::uint32_t dst_ip_be,
                                     std::uint8_t protocol, std::uint32_t ports) {
  const std::uint64_t a = (static_cast<std::uint64_t>(src_ip_be) << 32) | dst_ip_be;
  const std::uint64_t b = (static_cast<std::uint64_t>(protocol) << 32) | ports;
#if defined(__SSE4_2__)
  // CRC-32C over the two words (the SSE4.2 instruction, 3 cycles each, as DPDK's
  // rte_hash_crc): every output bit depends on every input bit, which is what the two users
  // need (the low 14 bits for the UDP source port, the high bits for the ECMP pick).
  return static_cast<std::uint32_t>(__builtin_ia32_crc32di(__builtin_ia32_crc32di(kFlowHashSeed, a), b));
#else
  // Two multiply-xorshift rounds (murmur3 finaliser constants).
  std::uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return static_cast<std::uint32_t>(h);
#endif
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
