// The flow hash: one function for the outer UDP source port (underlay ECMP/RSS entropy), ECMP
// choice among VTEPs, and software RSS in the runtime. Same 5-tuple, same hash, always, so a
// flow keeps one path and its order. Not symmetric (each direction is its own flow).
#pragma once

#include <cstdint>

namespace vxfed::dataplane {

constexpr std::uint32_t kFlowHashSeed = 0x9e3779b9;  // any non-zero start: all-zero tuples differ

// The hash of a flow given as two words laid out as an x86 (little-endian) load finds them
// in the packet, so the fast path reads each with one load and no byte swaps:
//   addresses   = src_ip_be | dst_ip_be << 32             (the 8 bytes from the IPv4 source)
//   proto_ports = protocol | ports_raw << 8, ports_raw = src_port_be | dst_port_be << 16
//                 (the 4 bytes at the L4 header); ports are 0 for non-TCP/UDP and fragments.
inline std::uint32_t flow_hash_words(std::uint64_t addresses, std::uint64_t proto_ports) {
#if defined(__SSE4_2__)
  // CRC-32C over the two words (the SSE4.2 instruction, 3 cycles each, as DPDK's
  // rte_hash_crc): every output bit depends on every input bit, which is what the two users
  // need (the low 14 bits for the UDP source port, the high bits for the ECMP pick).
  return static_cast<std::uint32_t>(__builtin_ia32_crc32di(__builtin_ia32_crc32di(kFlowHashSeed, addresses), proto_ports));
#else
  // Two multiply-xorshift rounds (murmur3 finaliser constants).
  std::uint64_t h = (addresses ^ (proto_ports * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return static_cast<std::uint32_t>(h);
#endif
}

// Addresses and ports as they sit in the packet (network order): hashing does not need host
// order. Ports are 0 for non-TCP/UDP and fragments.
inline std::uint32_t flow_hash(std::uint32_t src_ip_be, std::uint32_t dst_ip_be,
                               std::uint8_t protocol, std::uint16_t src_port_be,
                               std::uint16_t dst_port_be) {
  const std::uint64_t ports_raw = src_port_be | static_cast<std::uint64_t>(dst_port_be) << 16;
  return flow_hash_words(src_ip_be | static_cast<std::uint64_t>(dst_ip_be) << 32, protocol | ports_raw << 8);
}

// Outer UDP source port for a flow hash: 49152 + hash mod 16384.
constexpr std::uint16_t vxlan_src_port(std::uint32_t hash) {
  return static_cast<std::uint16_t>(49152u + (hash & 16383u));
}

}  // namespace vxfed::dataplane
