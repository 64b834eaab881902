#include "control/net_text.hpp"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace vxfed::control {

std::optional<std::uint32_t> parse_ipv4(const std::string& text) {
  std::uint32_t addr = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  for (int octet = 0; octet < 4; ++octet) {
    if (octet > 0) {
      if (p == end || *p != '.') return std::nullopt;
      ++p;
    }
    if (p == end || !std::isdigit(static_cast<unsigned char>(*p))) return std::nullopt;
    if (*p == '0' && p + 1 != end && std::isdigit(static_cast<unsigned char>(p[1]))) return std::nullopt;
    unsigned value = 0;
    auto [next, ec] = std::from_chars(p, end, value);
    if (ec != std::errc() || value > 255 || next - p > 3) return std::nullopt;
    addr = (addr << 8) | value;
    p = next;
  }
  if (p != end) return std::nullopt;
  return addr;
}

std::string format_ipv4(std::uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 0xff) + "." +
         std::to_string((a >> 8) & 0xff) + "." + std::to_string(a & 0xff);
}

std::string Cidr::str() const { return format_ipv4(addr) + "/" + std::to_string(len); }

static std::uint32_t mask_of(std::uint8_t len) { return len == 0 ? 0 : ~0u << (32 - len); }

bool Cidr::contains(std::uint32_t ip) const { return (ip & mask_of(len)) == addr; }

bool Cidr::overlaps(const Cidr& other) const {
  const auto shorter = std::min(len, other.len);
  return (addr & mask_of(shorter)) == (other.addr & mask_of(shorter));
}

std::optional<Cidr> parse_cidr(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) return std::nullopt;
  auto addr = parse_ipv4(text.substr(0, slash));
  if (!addr) return std::nullopt;
  const std::string len_text = text.substr(slash + 1);
  unsigned len = 0;
  auto [p, ec] = std::from_chars(len_text.data(), len_text.data() + len_text.size(), len);
  if (ec != std::errc() || p != len_text.data() + len_text.size() || len_text.empty() || len > 32)
    return std::nullopt;
  Cidr cidr{*addr, static_cast<std::uint8_t>(len)};
  if ((cidr.addr & mask_of(cidr.len)) != cidr.addr) return std::nullopt;
  return cidr;
}

bool is_mac(const std::string& text) {
  if (text.size() != 17) return false;
  for (std::size_t i = 0; i < 17; ++i) {
    if (i % 3 == 2) {
      if (text[i] != ':') return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(text[i]))) {
      return false;
    }
  }
  return true;
}

std::string normalize_mac(const std::string& text) {
  std::string out = text;
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string gateway_mac_for_vni(std::uint32_t vni) {
  char buf[18];
  std::snprintf(buf, sizeof(buf), "02:76:78:%02x:%02x:%02x", (vni >> 16) & 0xff, (vni >> 8) & 0xff,
                vni & 0xff);
  return buf;
}

bool is_dns_label(const std::string& text) {
  if (text.empty() || text.size() > 63 || text.front() == '-' || text.back() == '-') return false;
  for (char c : text)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-'))
      return false;
  return true;
}

}  // namespace vxfed::control
