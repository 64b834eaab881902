// IPv4 addresses, prefixes and interface addresses: the one vocabulary every part of vxfed
// uses to read, hold and print them. Pure, no I/O.
//
// Byte order: every integer here is in HOST byte order ("10.244.0.1" is 0x0af40001). Network
// order exists only at the edge that writes packets or kernel structures, through
// Ipv4Addr::to_network() / Ipv4Addr::from_network(); the dataplane converts once, when it
// builds its tables, and keeps network-order words on its packet path.
//
// Text: one strict spelling each (docs/conventions.md: addresses):
//   address    four decimal numbers 0..255 joined by '.', no leading zeros ("010" could be
//              read as octal), no sign, no spaces: "10.244.0.1"
//   prefix     address '/' length 0..32 (decimal, no leading zeros), host bits zero:
//              "10.244.0.0/16". "10.244.1.0/16" is refused ("did you mean 10.244.0.0/16?"):
//              a typo is not an intent, and every prefix has one spelling. Code that holds an
//              address and a length on purpose uses Ipv4Prefix::make (clears host bits) or
//              Ipv4Interface.
//   interface  an address with the length of its subnet, host bits allowed: "10.244.1.5/16"
//              (what an IPAM plugin hands out, what `ip addr` shows).
// Errors are sentences that quote the text and say what was expected.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace vxfed::net {

struct Ipv4Addr {
  std::uint32_t value = 0;  // host byte order

  static Result<Ipv4Addr> parse(std::string_view text);
  static constexpr Ipv4Addr from_network(std::uint32_t network_order) {
    return Ipv4Addr{__builtin_bswap32(network_order)};
  }
  constexpr std::uint32_t to_network() const { return __builtin_bswap32(value); }
  std::string str() const;  // "10.244.0.1"
  auto operator<=>(const Ipv4Addr&) const = default;
};
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "vxfed targets little-endian x86-64");

// The netmask of a prefix length (host order); len must be 0..32.
constexpr std::uint32_t prefix_mask(unsigned len) { return len == 0 ? 0 : ~std::uint32_t{0} << (32 - len); }

struct Ipv4Prefix {
  std::uint32_t addr = 0;  // host byte order, host bits always zero
  std::uint8_t len = 0;    // 0..32

  // Strict: refuses host bits set (see the top of this file).
  static Result<Ipv4Prefix> parse(std::string_view text);
  // The prefix of length `len` holding `addr`: host bits cleared, len above 32 taken as 32.
  static constexpr Ipv4Prefix make(std::uint32_t addr, unsigned len) {
    const std::uint8_t l = static_cast<std::uint8_t>(len > 32 ? 32 : len);
    return Ipv4Prefix{addr & prefix_mask(l), l};
  }
  static constexpr Ipv4Prefix make(Ipv4Addr addr, unsigned len) { return make(addr.value, len); }

  constexpr std::uint32_t mask() const { return prefix_mask(len); }
  constexpr Ipv4Addr network() const { return Ipv4Addr{addr}; }
  constexpr Ipv4Addr last() const { return Ipv4Addr{addr | ~mask()}; }  // the broadcast address
  constexpr bool contains(Ipv4Addr ip) const { return (ip.value & mask()) == addr; }
  // True when `other` lies inside this prefix (equal or more specific).
  constexpr bool contains(const Ipv4Prefix& other) const {
    return other.len >= len && (other.addr & mask()) == addr;
  }
  constexpr bool overlaps(const Ipv4Prefix& other) const {
    return contains(other) || other.contains(*this);
  }
  std::string str() const;  // "10.244.0.0/16"
  auto operator<=>(const Ipv4Prefix&) const = default;
};

struct Ipv4Interface {
  Ipv4Addr addr;         // the interface's own address, host bits kept
  std::uint8_t len = 0;  // 0..32, the length of its subnet

  static Result<Ipv4Interface> parse(std::string_view text);
  constexpr Ipv4Prefix prefix() const { return Ipv4Prefix::make(addr, len); }  // its subnet
  std::string str() const;  // "10.244.1.5/16"
  auto operator<=>(const Ipv4Interface&) const = default;
};

}  // namespace vxfed::net
