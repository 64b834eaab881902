#include "dataplane/core/path_mtu.hpp"

#include <algorithm>

namespace vxfed::dataplane {

bool PathMtuCache::learn(std::uint32_t vtep_ip_be, std::uint16_t mtu, std::uint16_t underlay_mtu) {
  if (vtep_ip_be == 0) return false;
  mtu = std::max(mtu, kMinMtu);
  if (mtu >= underlay_mtu) return false;  // says nothing the underlay MTU does not
  const auto expiry = static_cast<std::uint16_t>(clock_s_.load(std::memory_order_relaxed) + kLifetimeSeconds);
  const std::uint64_t want = make(vtep_ip_be, mtu, expiry);
  const std::uint32_t h = home(vtep_ip_be);
  // Workers may learn at the same moment (one ICMP each): every write is a compare-exchange
  // from what was read, retried from the start when it lost.
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::atomic<std::uint64_t>* free_slot = nullptr;
    std::uint64_t free_word = 0;
    bool retry = false;
    for (std::uint32_t i = 0; i < kProbes && !retry; ++i) {
      std::atomic<std::uint64_t>& slot = words_[(h + i) % kSlots];
      std::uint64_t w = slot.load(std::memory_order_acquire);
      if (ip_of(w) == vtep_ip_be) {
        if (mtu > mtu_of(w)) return false;  // a lower MTU is in force
        if (slot.compare_exchange_strong(w, want, std::memory_order_acq_rel)) return mtu < mtu_of(w);
        retry = true;
      } else if (!free_slot && (w == 0 || left(w) <= 0)) {
        free_slot = &slot;
        free_word = w;
      }
    }
    if (retry) continue;
    if (!free_slot) return false;  // every slot of this VTEP's neighbourhood is in force
    if (free_slot->compare_exchange_strong(free_word, want, std::memory_order_acq_rel)) {
      active_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

void PathMtuCache::tick(std::uint32_t now_s) {
  clock_s_.store(now_s, std::memory_order_relaxed);
  std::uint32_t in_force = 0;
  for (auto& slot : words_) {
    std::uint64_t w = slot.load(std::memory_order_acquire);
    if (w == 0) continue;
    if (left(w) > 0) {
      ++in_force;
      continue;
    }
    // Expired: cleared unless a worker refreshed it meanwhile (then it is in force again).
    if (slot.compare_exchange_strong(w, 0, std::memory_order_acq_rel)) continue;
    ++in_force;
  }
  // A worker's learn() between the scan and this store may be undercounted until the next
  // tick; any() is then briefly false and a packet may go out at the old size, which the
  // router answers again.
  active_.store(in_force, std::memory_order_relaxed);
}

std::vector<PathMtuCache::Exception> PathMtuCache::exceptions() const {
  std::vector<Exception> out;
  for (const auto& slot : words_) {
    const std::uint64_t w = slot.load(std::memory_order_acquire);
    if (w == 0 || left(w) <= 0) continue;
    out.push_back({ip_of(w), mtu_of(w), static_cast<std::uint32_t>(left(w))});
  }
  return out;
}

}  // namespace vxfed::dataplane
