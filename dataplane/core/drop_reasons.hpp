// DropReason and its names, generated from drop_reasons.def (the one list).
#pragma once

#include <cstdint>
#include <string_view>

namespace vxfed::dataplane {

enum class DropReason : std::uint8_t {
#define VXFED_DROP(name, counter, description) name,
#include "dataplane/core/drop_reasons.def"
#undef VXFED_DROP
};

constexpr std::uint32_t kDropReasonCount = 0
#define VXFED_DROP(name, counter, description) +1
#include "dataplane/core/drop_reasons.def"
#undef VXFED_DROP
    ;

// Stable snake_case counter name ("unknown_vni"), as reported in DropCounter.reason.
constexpr std::string_view drop_reason_name(DropReason r) {
  constexpr std::string_view names[] = {
#define VXFED_DROP(name, counter, description) #counter,
#include "dataplane/core/drop_reasons.def"
#undef VXFED_DROP
  };
  return names[static_cast<std::uint32_t>(r)];
}

constexpr std::string_view drop_reason_description(DropReason r) {
  constexpr std::string_view descriptions[] = {
#define VXFED_DROP(name, counter, description) description,
#include "dataplane/core/drop_reasons.def"
#undef VXFED_DROP
  };
  return descriptions[static_cast<std::uint32_t>(r)];
}

}  // namespace vxfed::dataplane
