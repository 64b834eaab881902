// The text forms the protobuf tables carry, parsed by common/net at the table-building edge
// and held as the network-order words the packet path compares against (never converted per
// packet). Only the control thread calls these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/net/ipv4.hpp"
#include "common/net/mac.hpp"
#include "dataplane/core/wire/ethernet.hpp"

namespace vxfed::dataplane {

using Prefix = net::Ipv4Prefix;  // host order, host bits zero

inline std::optional<std::uint32_t> parse_ipv4(std::string_view text) {  // network order
  auto a = net::Ipv4Addr::parse(text);
  if (!a) return std::nullopt;
  return a->to_network();
}

inline std::optional<wire::MacAddress> parse_mac(std::string_view text) {
  auto m = net::parse_mac(text);
  if (!m) return std::nullopt;
  return *m;
}

// The prefix, or nullopt with why it is not one in *why (common/net's wording).
inline std::optional<Prefix> parse_prefix(std::string_view text, std::string* why) {
  auto p = net::Ipv4Prefix::parse(text);
  if (!p) {
    if (why) *why = p.error();
    return std::nullopt;
  }
  return *p;
}

inline std::string ipv4_text(std::uint32_t ip_be) { return net::Ipv4Addr::from_network(ip_be).str(); }
inline std::string mac_text(const wire::MacAddress& mac) { return net::format_mac(mac); }

}  // namespace vxfed::dataplane
