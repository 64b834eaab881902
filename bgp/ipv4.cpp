#include "bgp/ipv4.hpp"

#include <arpa/inet.h>

#include <charconv>

namespace vxfed::bgp {

Result<Ipv4Addr> Ipv4Addr::parse(std::string_view text) {
  // inet_pton accepts exactly dotted-quad decimal for AF_INET; it needs a terminated string.
  std::string s(text);
  in_addr a{};
  if (s.empty() || ::inet_pton(AF_INET, s.c_str(), &a) != 1) {
    return make_error("'" + s + "' is not an IPv4 address");
  }
  return Ipv4Addr{ntohl(a.s_addr)};
}

std::string Ipv4Addr::str() const {
  char buf[INET_ADDRSTRLEN];
  in_addr a{htonl(value)};
  ::inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return buf;
}

Result<Ipv4Prefix> Ipv4Prefix::parse(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    return make_error("'" + std::string(text) + "' is not a CIDR (expected a.b.c.d/len)");
  }
  auto addr = Ipv4Addr::parse(text.substr(0, slash));
  if (!addr) return make_error("'" + std::string(text) + "' is not a CIDR: " + addr.error());
  auto len_text = text.substr(slash + 1);
  unsigned len = 0;
  auto [ptr, ec] = std::from_chars(len_text.data(), len_text.data() + len_text.size(), len);
  if (len_text.empty() || ec != std::errc() || ptr != len_text.data() + len_text.size() || len > 32) {
    return make_error("'" + std::string(text) + "' has an invalid prefix length (0..32)");
  }
  Ipv4Prefix p = make(addr->value, static_cast<std::uint8_t>(len));
  if (p.addr != addr->value) {
    return make_error("'" + std::string(text) + "' has host bits set (did you mean " + p.str() +
                      "?)");
  }
  return p;
}

Ipv4Prefix Ipv4Prefix::make(std::uint32_t addr, std::uint8_t len) {
  Ipv4Prefix p;
  p.len = len > 32 ? 32 : len;
  p.addr = addr & p.mask();
  return p;
}

std::string Ipv4Prefix::str() const {
  return Ipv4Addr{addr}.str() + "/" + std::to_string(len);
}

}  // namespace vxfed::bgp
