// Text forms of addresses as they appear in the protobuf tables ("10.244.0.1",
// "10.245.0.0/16", "02:00:00:00:00:01"), parsed strictly on the control thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dataplane/core/wire/ethernet.hpp"

namespace vxfed::dataplane {

struct Prefix {
  std::uint32_t addr = 0;  // host order, host bits zero
  std::uint8_t len = 0;
};

std::optional<std::uint32_t> parse_ipv4(std::string_view text);   // network order
std::optional<wire::MacAddress> parse_mac(std::string_view text);
// Why a prefix is invalid, or the prefix. Host bits must be zero.
std::optional<Prefix> parse_prefix(std::string_view text, std::string* why);

std::string ipv4_text(std::uint32_t ip_be);
std::string mac_text(const wire::MacAddress& mac);

}  // namespace vxfed::dataplane
