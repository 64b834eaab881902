// NeighborCache: see neighbor_cache.hpp for the slot word layout and who writes what.
#include "dataplane/core/neighbor_cache.hpp"

#include <string>

namespace vxfed::dataplane {

using wire::MacAddress;

NeighborCache::NeighborCache(std::uint32_t capacity)
    : capacity_(capacity), words_(new std::atomic<std::uint64_t>[capacity]) {
  for (std::uint32_t i = 0; i < capacity; ++i) words_[i].store(0, std::memory_order_relaxed);
}

Result<std::uint32_t> NeighborCache::slot_for(std::uint32_t ip_be) {
  if (auto it = slot_of_.find(ip_be); it != slot_of_.end()) return it->second;
  if (ips_.size() >= capacity_)
    return make_error("neighbour cache full: " + std::to_string(capacity_) +
                      " VTEP addresses seen since start");
  const auto slot = static_cast<std::uint32_t>(ips_.size());
  ips_.push_back(ip_be);
  slot_of_.emplace(ip_be, slot);
  return slot;
}

Status NeighborCache::set_routers(const std::vector<std::uint32_t>& ips_be) {
  if (ips_be.size() > kMaxRouters)
    return make_error("at most " + std::to_string(kMaxRouters) + " underlay routers (--underlay-gateway and "
                      "--underlay-route next hops), got " + std::to_string(ips_be.size()));
  router_count_ = 0;
  for (const std::uint32_t ip : ips_be) {
    auto slot = slot_for(ip);
    if (!slot) return make_error(slot.error());
    routers_[router_count_++] = RouterSlot{ip, *slot};
  }
  return {};
}

std::optional<std::uint32_t> NeighborCache::find_slot(std::uint32_t ip_be) const {
  if (auto it = slot_of_.find(ip_be); it != slot_of_.end()) return it->second;
  return std::nullopt;
}

void NeighborCache::set_static(std::uint32_t slot, const MacAddress& mac) {
  words_[slot].store(wire::mac_to_u64(mac) | kValid | kStatic, std::memory_order_release);
  changes_.fetch_add(1, std::memory_order_release);
}

void NeighborCache::clear_static(std::uint32_t slot) {
  if (words_[slot].load(std::memory_order_relaxed) & kStatic) {
    words_[slot].store(0, std::memory_order_release);
    changes_.fetch_add(1, std::memory_order_release);
  }
}

std::vector<std::uint32_t> NeighborCache::take_wanted() {
  std::vector<std::uint32_t> out;
  for (std::uint32_t slot = 0; slot < ips_.size(); ++slot) {
    std::uint64_t w = words_[slot].load(std::memory_order_relaxed);
    if (!(w & kWanted)) continue;
    // Clear the flag unless a worker learned the MAC meanwhile (then nothing to ask).
    while (!words_[slot].compare_exchange_weak(w, w & ~kWanted, std::memory_order_relaxed)) {
    }
    if (!(w & kValid)) out.push_back(ips_[slot]);
  }
  return out;
}

bool NeighborCache::learn(std::uint32_t ip_be, const MacAddress& mac) {
  auto slot = find_slot(ip_be);
  if (!slot) return false;
  const std::uint64_t before = words_[*slot].load(std::memory_order_relaxed);
  learn_slot(*slot, mac);
  return words_[*slot].load(std::memory_order_relaxed) != before;
}

void NeighborCache::learn_slot(std::uint32_t slot, const MacAddress& mac) {
  const std::uint64_t want = wire::mac_to_u64(mac) | kValid;
  std::uint64_t w = words_[slot].load(std::memory_order_relaxed);
  // Static entries are configuration; ARP never overrides them. Unchanged: no write.
  while (!(w & kStatic) && (w & (kMacMask | kValid)) != want) {
    if (words_[slot].compare_exchange_weak(w, want, std::memory_order_release)) {
      changes_.fetch_add(1, std::memory_order_release);  // rare: a MAC learned or changed
      break;
    }
  }
}

std::optional<MacAddress> NeighborCache::lookup(std::uint32_t ip_be) const {
  auto slot = find_slot(ip_be);
  if (!slot) return std::nullopt;
  const std::uint64_t w = read(*slot);
  if (!(w & kValid)) return std::nullopt;
  return wire::mac_from_u64(w & kMacMask);
}

}  // namespace vxfed::dataplane
