// VniCounterSlots: stable per-VNI counter slots (see counters.hpp).
#include "dataplane/core/counters.hpp"

#include <string>

namespace vxfed::dataplane {

Result<std::uint16_t> VniCounterSlots::slot_for(std::uint32_t vni) {
  if (auto it = slots_.find(vni); it != slots_.end()) return it->second;
  if (order_.size() >= kMaxVniSlots)
    return make_error("vni " + std::to_string(vni) + ": no counter slot left (" +
                      std::to_string(kMaxVniSlots) +
                      " distinct VNIs used since start); restart the dataplane to reclaim");
  const auto slot = static_cast<std::uint16_t>(order_.size());
  slots_.emplace(vni, slot);
  order_.emplace_back(vni, slot);
  return slot;
}

std::optional<std::uint16_t> VniCounterSlots::find(std::uint32_t vni) const {
  if (auto it = slots_.find(vni); it != slots_.end()) return it->second;
  return std::nullopt;
}

}  // namespace vxfed::dataplane
