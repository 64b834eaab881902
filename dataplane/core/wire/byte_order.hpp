// Network byte order on the wire: fields that hold big-endian values have type be16/be32 and
// a name ending in _be, so a missing conversion is visible at the point of use.
// Plain C++ (no DPDK): the parsers built on these headers are fuzzed without DPDK.
#pragma once

#include <cstdint>

namespace vxfed::wire {

using be16 = std::uint16_t;
using be32 = std::uint32_t;

constexpr be16 to_be16(std::uint16_t host) { return __builtin_bswap16(host); }
constexpr be32 to_be32(std::uint32_t host) { return __builtin_bswap32(host); }
constexpr std::uint16_t from_be16(be16 net) { return __builtin_bswap16(net); }
constexpr std::uint32_t from_be32(be32 net) { return __builtin_bswap32(net); }

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "vxfed targets little-endian x86-64");

// Big-endian fields at any byte offset of a packet (no alignment assumed), for code that
// walks headers by offset rather than through the structs above.
inline std::uint16_t load_be16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }
inline std::uint32_t load_be32(const std::uint8_t* p) { return std::uint32_t{load_be16(p)} << 16 | load_be16(p + 2); }
inline void store_be16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}
inline void store_be32(std::uint8_t* p, std::uint32_t v) {
  store_be16(p, static_cast<std::uint16_t>(v >> 16));
  store_be16(p + 2, static_cast<std::uint16_t>(v));
}

}  // namespace vxfed::wire
