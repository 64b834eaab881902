#include "vni/crc32c.hpp"

#include <array>

namespace vxfed::vni {

namespace {

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    table[i] = crc;
  }
  return table;
}

constexpr auto kTable = make_table();

}  // namespace

std::uint32_t crc32c(std::string_view bytes, std::uint32_t seed) {
  std::uint32_t crc = ~seed;
  for (unsigned char c : bytes) crc = kTable[(crc ^ c) & 0xff] ^ (crc >> 8);
  return ~crc;
}

}  // namespace vxfed::vni
