#include "common/net/mac.hpp"

#include <cstdio>

namespace vxfed::net {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<Mac> parse_mac(std::string_view text) {
  Mac mac{};
  bool ok = text.size() == 17;
  for (std::size_t i = 0; ok && i < 6; ++i) {
    const std::size_t at = i * 3;
    const int hi = hex_digit(text[at]);
    const int lo = hex_digit(text[at + 1]);
    ok = hi >= 0 && lo >= 0 && (i == 5 || text[at + 2] == ':');
    mac[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  if (!ok)
    return make_error("'" + std::string(text) +
                      "' is not a MAC address (expected six hex pairs joined by ':' like 02:00:00:00:00:01)");
  return mac;
}

std::string format_mac(const Mac& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return buf;
}

}  // namespace vxfed::net
