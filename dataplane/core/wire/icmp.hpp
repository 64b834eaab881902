// ICMPv4 (RFC 792): the dataplane only sends destination-unreachable / fragmentation-needed
// (RFC 1191) to pods whose packets are too big for the tunnel.
#pragma once

#include <cstdint>

#include "dataplane/core/wire/byte_order.hpp"

namespace vxfed::wire {

struct __attribute__((packed)) IcmpHeader {
  std::uint8_t type;
  std::uint8_t code;
  be16 checksum_be;
  be16 unused_be;        // 0 for fragmentation-needed
  be16 next_hop_mtu_be;  // RFC 1191: MTU of the next hop
};
static_assert(sizeof(IcmpHeader) == 8);

constexpr std::uint8_t kIcmpDestUnreachable = 3;
constexpr std::uint8_t kIcmpCodeFragNeeded = 4;
constexpr std::uint8_t kIcmpEchoReply = 0;
constexpr std::uint8_t kIcmpEchoRequest = 8;

}  // namespace vxfed::wire
