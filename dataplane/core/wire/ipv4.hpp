// IPv4 header (RFC 791). Options, when present, follow; the dataplane refuses them on the
// outer header and skips them on inner headers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dataplane/core/wire/byte_order.hpp"

namespace vxfed::wire {

struct __attribute__((packed)) Ipv4Header {
  std::uint8_t version_ihl;      // version (4) in the high nibble, header length in 32-bit words
  std::uint8_t tos;              // DSCP (6 bits) + ECN (2 bits)
  be16 total_length_be;
  be16 id_be;
  be16 fragment_be;              // flags (reserved, DF, MF) + 13-bit offset in 8-byte units
  std::uint8_t ttl;
  std::uint8_t protocol;
  be16 checksum_be;
  be32 src_be;
  be32 dst_be;
};
static_assert(sizeof(Ipv4Header) == 20);

constexpr std::uint16_t kIpv4FlagDf = 0x4000;
constexpr std::uint16_t kIpv4FlagMf = 0x2000;
constexpr std::uint16_t kIpv4OffsetMask = 0x1fff;
constexpr std::uint8_t kIpProtoIcmp = 1;
constexpr std::uint8_t kIpProtoTcp = 6;
constexpr std::uint8_t kIpProtoUdp = 17;

// One's-complement sum of a header (no DPDK: used by the pure parser and the tests).
inline std::uint16_t ipv4_checksum(const void* header, std::size_t len) {
  const auto* p = static_cast<const std::uint8_t*>(header);
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < len; i += 2) sum += static_cast<std::uint32_t>(p[i] << 8 | p[i + 1]);
  if (len & 1) sum += static_cast<std::uint32_t>(p[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);  // host order; store with to_be16
}

}  // namespace vxfed::wire
