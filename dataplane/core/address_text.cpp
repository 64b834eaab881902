#include "dataplane/core/address_text.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <cstdio>

namespace vxfed::dataplane {

std::optional<std::uint32_t> parse_ipv4(std::string_view text) {
  if (text.empty() || text.size() > 15) return std::nullopt;
  char buf[16];
  text.copy(buf, text.size());
  buf[text.size()] = '\0';
  in_addr a{};
  if (inet_pton(AF_INET, buf, &a) != 1) return std::nullopt;  // strict dotted quad
  return a.s_addr;
}

std::optional<wire::MacAddress> parse_mac(std::string_view text) {
  if (text.size() != 17) return std::nullopt;
  wire::MacAddress mac{};
  for (std::size_t i = 0; i < 6; ++i) {
    const std::size_t at = i * 3;
    if (i < 5 && text[at + 2] != ':') return std::nullopt;
    unsigned v = 0;
    auto [p, ec] = std::from_chars(text.data() + at, text.data() + at + 2, v, 16);
    if (ec != std::errc() || p != text.data() + at + 2) return std::nullopt;
    mac[i] = static_cast<std::uint8_t>(v);
  }
  return mac;
}

std::optional<Prefix> parse_prefix(std::string_view text, std::string* why) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    *why = "must be address/length";
    return std::nullopt;
  }
  auto ip = parse_ipv4(text.substr(0, slash));
  if (!ip) {
    *why = "address is not IPv4";
    return std::nullopt;
  }
  const auto len_text = text.substr(slash + 1);
  unsigned len = 0;
  auto [p, ec] = std::from_chars(len_text.data(), len_text.data() + len_text.size(), len);
  if (len_text.empty() || ec != std::errc() || p != len_text.data() + len_text.size() || len > 32) {
    *why = "prefix length must be 0..32";
    return std::nullopt;
  }
  const std::uint32_t host = ntohl(*ip);
  const std::uint32_t mask = len == 0 ? 0 : ~0u << (32 - len);
  if (host & ~mask) {
    *why = "host bits are set (did you mean " + ipv4_text(htonl(host & mask)) + "/" +
           std::to_string(len) + "?)";
    return std::nullopt;
  }
  return Prefix{host, static_cast<std::uint8_t>(len)};
}

std::string ipv4_text(std::uint32_t ip_be) {
  char buf[INET_ADDRSTRLEN];
  in_addr a{ip_be};
  inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return buf;
}

std::string mac_text(const wire::MacAddress& mac) {
  char buf[18];
  std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2],
                mac[3], mac[4], mac[5]);
  return buf;
}

}  // namespace vxfed::dataplane
