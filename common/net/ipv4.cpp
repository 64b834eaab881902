#include "common/net/ipv4.hpp"

#include <optional>

namespace vxfed::net {

namespace {

// A decimal number of 1..max_digits digits without a leading zero (a lone "0" is fine), at
// most `max`; nullopt otherwise (empty, sign, space, hex, "010").
std::optional<std::uint32_t> decimal(std::string_view text, std::size_t max_digits, std::uint32_t max) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  if (text.size() > 1 && text[0] == '0') return std::nullopt;
  std::uint32_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (v > max) return std::nullopt;
  return v;
}

std::optional<std::uint32_t> dotted_quad(std::string_view text) {
  std::uint32_t out = 0;
  for (int i = 0; i < 4; ++i) {
    const auto dot = i < 3 ? text.find('.') : text.size();
    if (dot == std::string_view::npos) return std::nullopt;
    auto octet = decimal(text.substr(0, dot), 3, 255);
    if (!octet) return std::nullopt;
    out = (out << 8) | *octet;
    text.remove_prefix(i < 3 ? dot + 1 : dot);
  }
  return out;
}

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

Error not_an_address(std::string_view text) {
  return make_error(quoted(text) + " is not an IPv4 address (expected four numbers 0..255 like 10.244.0.1)");
}

// "a.b.c.d/len" split and checked, host bits not looked at; `what` names the form in errors.
Result<Ipv4Interface> address_and_length(std::string_view text, const char* what) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos)
    return make_error(quoted(text) + " is not " + what + " (expected a.b.c.d/len like 10.244.0.0/16)");
  const auto addr = dotted_quad(text.substr(0, slash));
  if (!addr)
    return make_error(quoted(text) + " is not " + what + ": " + quoted(text.substr(0, slash)) +
                      " is not an IPv4 address");
  const auto len = decimal(text.substr(slash + 1), 2, 32);
  if (!len) return make_error(quoted(text) + " has an invalid prefix length (expected 0..32)");
  return Ipv4Interface{Ipv4Addr{*addr}, static_cast<std::uint8_t>(*len)};
}

std::string dotted(std::uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 0xff) + "." +
         std::to_string((a >> 8) & 0xff) + "." + std::to_string(a & 0xff);
}

}  // namespace

Result<Ipv4Addr> Ipv4Addr::parse(std::string_view text) {
  const auto v = dotted_quad(text);
  if (!v) return not_an_address(text);
  return Ipv4Addr{*v};
}

std::string Ipv4Addr::str() const { return dotted(value); }

Result<Ipv4Prefix> Ipv4Prefix::parse(std::string_view text) {
  auto parts = address_and_length(text, "an IPv4 CIDR");
  if (!parts) return make_error(parts.error());
  const Ipv4Prefix p = parts->prefix();
  if (p.addr != parts->addr.value)
    return make_error(quoted(text) + " has host bits set (did you mean " + p.str() + "?)");
  return p;
}

std::string Ipv4Prefix::str() const { return dotted(addr) + "/" + std::to_string(len); }

Result<Ipv4Interface> Ipv4Interface::parse(std::string_view text) {
  return address_and_length(text, "an IPv4 address with a prefix length");
}

std::string Ipv4Interface::str() const { return addr.str() + "/" + std::to_string(len); }

}  // namespace vxfed::net
