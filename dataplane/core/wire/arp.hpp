// ARP for IPv4 over Ethernet (RFC 826): the only ARP the dataplane speaks.
#pragma once

#include <cstdint>

#include "dataplane/core/wire/byte_order.hpp"
#include "dataplane/core/wire/ethernet.hpp"

namespace vxfed::wire {

struct __attribute__((packed)) ArpHeader {
  be16 hardware_type_be;   // 1: Ethernet
  be16 protocol_type_be;   // 0x0800: IPv4
  std::uint8_t hardware_len;  // 6
  std::uint8_t protocol_len;  // 4
  be16 opcode_be;          // 1 request, 2 reply
  MacAddress sender_mac;
  be32 sender_ip_be;
  MacAddress target_mac;
  be32 target_ip_be;
};
static_assert(sizeof(ArpHeader) == 28);

constexpr std::uint16_t kArpHardwareEthernet = 1;
constexpr std::uint16_t kArpOpRequest = 1;
constexpr std::uint16_t kArpOpReply = 2;

}  // namespace vxfed::wire
