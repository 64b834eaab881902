// Ethernet II header. No VLAN tag in the frame: the uplink port inserts and strips the underlay tag (underlay_tag.hpp); pod ports are untagged.
#pragma once

#include <array>
#include <cstdint>

#include "common/net/mac.hpp"
#include "dataplane/core/wire/byte_order.hpp"

namespace vxfed::wire {

// The one MAC type (common/net/mac.hpp, which parses and prints it), in wire order.
using MacAddress = net::Mac;

struct __attribute__((packed)) EthernetHeader {
  MacAddress dst;
  MacAddress src;
  be16 ether_type_be;
};
static_assert(sizeof(EthernetHeader) == 14);

constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::uint16_t kEtherTypeArp = 0x0806;

constexpr MacAddress kBroadcastMac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

// A MAC packed into the low 48 bits of an integer (byte 0 of the address in bits 40..47),
// the form the neighbour cache stores atomically.
constexpr std::uint64_t mac_to_u64(const MacAddress& mac) {
  std::uint64_t v = 0;
  for (auto b : mac) v = (v << 8) | b;
  return v;
}
constexpr MacAddress mac_from_u64(std::uint64_t v) {
  MacAddress mac{};
  for (int i = 5; i >= 0; --i) {
    mac[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v & 0xff);
    v >>= 8;
  }
  return mac;
}

}  // namespace vxfed::wire
