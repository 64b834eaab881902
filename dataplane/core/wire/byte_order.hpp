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

}  // namespace vxfed::wire
