// IPv4 addresses and prefixes as the BGP adapter handles them: host-order integers, parsed
// from and printed as dotted text. Pure, no I/O.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace vxfed::bgp {

struct Ipv4Addr {
  std::uint32_t value = 0;  // host byte order

  static Result<Ipv4Addr> parse(std::string_view text);
  std::string str() const;
  auto operator<=>(const Ipv4Addr&) const = default;
};

struct Ipv4Prefix {
  std::uint32_t addr = 0;  // host byte order, host bits always zero
  std::uint8_t len = 0;    // 0..32

  // "10.245.0.0/16". Host bits set ("10.245.1.0/16") are an error: a typo, not an intent.
  static Result<Ipv4Prefix> parse(std::string_view text);
  // Normalises (clears host bits); len must be <= 32.
  static Ipv4Prefix make(std::uint32_t addr, std::uint8_t len);
  std::string str() const;
  std::uint32_t mask() const { return len == 0 ? 0 : ~std::uint32_t{0} << (32 - len); }
  // True when `other` lies inside this prefix (equal or more specific).
  bool contains(const Ipv4Prefix& other) const {
    return other.len >= len && (other.addr & mask()) == addr;
  }
  auto operator<=>(const Ipv4Prefix&) const = default;
};

}  // namespace vxfed::bgp
