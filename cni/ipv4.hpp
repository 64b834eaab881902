// IPv4 text helpers for the plugin: addresses, prefixes, MACs. Pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vxfed::cni {

struct Ipv4Prefix {
  std::uint32_t addr = 0;   // host order; for an interface address, the host's own address
  int len = 0;
  bool operator==(const Ipv4Prefix&) const = default;
  std::uint32_t network() const { return len == 0 ? 0 : addr & (~0u << (32 - len)); }
  std::string str() const;        // "10.244.1.5/16"
  std::string addr_str() const;   // "10.244.1.5"
  std::string network_str() const;  // "10.244.0.0/16"
};

std::optional<std::uint32_t> parse_ipv4(std::string_view text);
std::string format_ipv4(std::uint32_t addr);
std::optional<Ipv4Prefix> parse_prefix(std::string_view text);  // "a.b.c.d/n"
bool contains(const Ipv4Prefix& net, std::uint32_t addr);

using Mac = std::array<std::uint8_t, 6>;
std::optional<Mac> parse_mac(std::string_view text);  // "aa:bb:cc:dd:ee:ff" (or '-')
std::string format_mac(const Mac& mac);               // lowercase, ':'
bool is_unicast(const Mac& mac);                      // not multicast, not all zero

}  // namespace vxfed::cni
