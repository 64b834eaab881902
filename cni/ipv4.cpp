#include "cni/ipv4.hpp"

#include <charconv>
#include <cstdio>

namespace vxfed::cni {

std::optional<std::uint32_t> parse_ipv4(std::string_view text) {
  std::uint32_t out = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  for (int i = 0; i < 4; ++i) {
    if (p == end || *p < '0' || *p > '9') return std::nullopt;
    unsigned octet = 0;
    const char* start = p;
    auto [next, ec] = std::from_chars(p, end, octet);
    if (ec != std::errc{} || octet > 255 || next - start > 3) return std::nullopt;
    p = next;
    out = (out << 8) | octet;
    if (i < 3) {
      if (p == end || *p != '.') return std::nullopt;
      ++p;
    }
  }
  if (p != end) return std::nullopt;
  return out;
}

std::string format_ipv4(std::uint32_t a) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
  return buf;
}

std::optional<Ipv4Prefix> parse_prefix(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto addr = parse_ipv4(text.substr(0, slash));
  if (!addr) return std::nullopt;
  const auto len_text = text.substr(slash + 1);
  int len = -1;
  auto [next, ec] = std::from_chars(len_text.data(), len_text.data() + len_text.size(), len);
  if (ec != std::errc{} || next != len_text.data() + len_text.size() || len < 0 || len > 32 ||
      len_text.empty() || len_text.size() > 2)
    return std::nullopt;
  return Ipv4Prefix{*addr, len};
}

std::string Ipv4Prefix::str() const { return format_ipv4(addr) + "/" + std::to_string(len); }
std::string Ipv4Prefix::addr_str() const { return format_ipv4(addr); }
std::string Ipv4Prefix::network_str() const { return format_ipv4(network()) + "/" + std::to_string(len); }

bool contains(const Ipv4Prefix& net, std::uint32_t addr) {
  if (net.len == 0) return true;
  const std::uint32_t mask = ~0u << (32 - net.len);
  return (addr & mask) == (net.addr & mask);
}

std::optional<Mac> parse_mac(std::string_view text) {
  if (text.size() != 17) return std::nullopt;
  Mac mac{};
  for (int i = 0; i < 6; ++i) {
    if (i > 0) {
      const char sep = text[i * 3 - 1];
      if (sep != ':' && sep != '-') return std::nullopt;
    }
    unsigned v = 0;
    const char* p = text.data() + i * 3;
    auto [next, ec] = std::from_chars(p, p + 2, v, 16);
    if (ec != std::errc{} || next != p + 2) return std::nullopt;
    mac[i] = static_cast<std::uint8_t>(v);
  }
  return mac;
}

std::string format_mac(const Mac& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return buf;
}

bool is_unicast(const Mac& m) {
  if (m[0] & 1) return false;
  for (auto b : m)
    if (b != 0) return true;
  return false;
}

}  // namespace vxfed::cni
