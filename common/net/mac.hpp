// Ethernet MAC addresses: the one type (six bytes in wire order, so the dataplane's packet
// headers hold the same type, dataplane/core/wire/ethernet.hpp), one parse, one format.
// Pure, no I/O.
//
// Text: six two-digit hex pairs joined by ':', either case: "02:00:00:00:00:01". Printed in
// lower case. '-' separators, single digits and Cisco dots are refused (one spelling).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace vxfed::net {

using Mac = std::array<std::uint8_t, 6>;

Result<Mac> parse_mac(std::string_view text);
std::string format_mac(const Mac& mac);  // "02:00:00:00:00:01"

constexpr bool is_multicast(const Mac& mac) { return (mac[0] & 1) != 0; }  // broadcast too
constexpr bool is_zero(const Mac& mac) {
  for (auto b : mac)
    if (b != 0) return false;
  return true;
}
// A MAC a host may own: not multicast or broadcast, not all zero.
constexpr bool is_unicast(const Mac& mac) { return !is_multicast(mac) && !is_zero(mac); }

}  // namespace vxfed::net
