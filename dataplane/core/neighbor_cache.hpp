// Underlay neighbours (remote VTEP IPv4 -> MAC), outside the immutable tables because ARP
// resolves them at run time. Fixed slots, one atomic 64-bit word each:
//   bits 0..47 MAC, bit 48 valid, bit 49 static, bit 50 wanted (a worker needed it unresolved).
// Workers read and learn lock-free by slot number (the tables store each VTEP's slot); the
// control thread assigns slots (never recycled: a VTEP keeps its slot for the life of the
// process) and collects 'wanted' slots to send ARP requests.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/result.hpp"  // common/
#include "dataplane/core/wire/ethernet.hpp"

namespace vxfed::dataplane {

class NeighborCache {
 public:
  static constexpr std::uint32_t kDefaultCapacity = 1u << 18;  // 262,144 VTEPs
  static constexpr std::uint64_t kMacMask = (1ull << 48) - 1;
  static constexpr std::uint64_t kValid = 1ull << 48;
  static constexpr std::uint64_t kStatic = 1ull << 49;
  static constexpr std::uint64_t kWanted = 1ull << 50;

  explicit NeighborCache(std::uint32_t capacity = kDefaultCapacity);
  NeighborCache(const NeighborCache&) = delete;
  NeighborCache& operator=(const NeighborCache&) = delete;

  // ---- control thread only ----
  // The slot of `ip_be`, assigned on first use. Fails when every slot is taken.
  Result<std::uint32_t> slot_for(std::uint32_t ip_be);
  // Slot already assigned to ip_be, if any.
  std::optional<std::uint32_t> find_slot(std::uint32_t ip_be) const;
  // Static entries win over ARP; clearing one makes the slot unresolved again.
  void set_static(std::uint32_t slot, const wire::MacAddress& mac);
  void clear_static(std::uint32_t slot);
  // IPs (network order) that a worker wanted while unresolved, clearing their wanted flag.
  // The runtime sends one ARP request for each (see build_arp_request in pipeline.hpp).
  std::vector<std::uint32_t> take_wanted();
  // Learns a MAC for a known slot's IP (ARP reply seen by the control side). No-op for IPs
  // without a slot and for static entries. Returns whether the cache changed.
  bool learn(std::uint32_t ip_be, const wire::MacAddress& mac);
  std::optional<wire::MacAddress> lookup(std::uint32_t ip_be) const;
  // Underlay routers (not VTEPs) whose ARP replies and announcements the workers learn like a
  // VTEP's: gives each a slot. Call before the workers start; at most kMaxRouters.
  Status set_routers(const std::vector<std::uint32_t>& ips_be);
  std::uint32_t size() const { return static_cast<std::uint32_t>(ips_.size()); }
  // Counts every change of a slot's MAC or its validity (a worker's learning included), so
  // the control thread can tell when the copies in the VTEP entries are due
  // (ForwardingTables::copy_neighbor_macs).
  std::uint64_t changes() const { return changes_.load(std::memory_order_acquire); }
  std::uint32_t capacity() const { return capacity_; }

  // ---- workers (lock-free) ----
  std::uint64_t read(std::uint32_t slot) const {
    return words_[slot].load(std::memory_order_acquire);
  }
  // The slot words themselves, for a burst loop to keep in a register (read like read()).
  const std::atomic<std::uint64_t>* words() const { return words_.get(); }
  // Flags the slot so the control thread ARPs for it; writes only if not flagged yet, so a
  // burst toward an unresolved VTEP does not bounce the cache line between cores.
  void want(std::uint32_t slot) {
    if (!(words_[slot].load(std::memory_order_relaxed) & kWanted))
      words_[slot].fetch_or(kWanted, std::memory_order_relaxed);
  }
  // Learns from an ARP packet a worker saw (sender of a reply or request on the uplink).
  void learn_slot(std::uint32_t slot, const wire::MacAddress& mac);
  // The slot of a router given to set_routers (ARP path only: a short linear search).
  const std::uint32_t* router_slot(std::uint32_t ip_be) const {
    for (std::uint32_t i = 0; i < router_count_; ++i)
      if (routers_[i].ip_be == ip_be) return &routers_[i].slot;
    return nullptr;
  }

  static constexpr std::uint32_t kMaxRouters = 16;

 private:
  std::uint32_t capacity_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> words_;
  std::atomic<std::uint64_t> changes_{0};
  std::vector<std::uint32_t> ips_;                           // slot -> ip (network order)
  std::unordered_map<std::uint32_t, std::uint32_t> slot_of_; // ip -> slot
  struct RouterSlot {
    std::uint32_t ip_be = 0, slot = 0;
  };
  std::array<RouterSlot, kMaxRouters> routers_{};  // written before the workers start only
  std::uint32_t router_count_ = 0;
};

}  // namespace vxfed::dataplane
