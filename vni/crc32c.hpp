// CRC-32C (Castagnoli), the checksum of every record the stores write. Pure, no I/O.
#pragma once

#include <cstdint>
#include <string_view>

namespace vxfed::vni {

std::uint32_t crc32c(std::string_view bytes, std::uint32_t seed = 0);

}  // namespace vxfed::vni
