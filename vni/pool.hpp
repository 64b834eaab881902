// VNI pools and the allocator: named VNI ranges selected by network labels, pinned VNIs,
// release with hold-down. Pure bookkeeping: no I/O, no clock (callers pass `now_ms`), so the
// daemon persists every change (allocation_store.hpp) before acknowledging it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace vxfed::vni {

// 0 and 2^24-1 are reserved: never allocated, never accepted as pinned.
inline constexpr std::uint32_t kMinVni = 1;
inline constexpr std::uint32_t kMaxVni = 16777214;
inline constexpr std::uint64_t kDefaultHoldDownMs = 5 * 60 * 1000;

using Labels = std::map<std::string, std::string>;

struct Range {
  std::uint32_t first = 0;
  std::uint32_t last = 0;
  std::uint32_t size() const { return last - first + 1; }
  bool contains(std::uint32_t vni) const { return vni >= first && vni <= last; }
  std::string str() const;
};

// "1000-2000" or "1500" -> Range.
Result<Range> parse_range(const std::string& text);

struct PoolSpec {
  std::string name;
  std::vector<Range> ranges;
  Labels selector;  // every key=value must be among the network's labels; empty matches all
};

enum class State { allocated, pinned, held };
const char* state_name(State state);
std::optional<State> parse_state(const std::string& name);

struct Allocation {
  std::uint32_t vni = 0;
  std::string pool;         // "" for pinned VNIs
  std::string network;      // held records keep the name so the network can reclaim its VNI
  State state = State::allocated;
  std::uint64_t held_until_ms = 0;
  bool operator==(const Allocation&) const = default;
};

class Allocator {
 public:
  // Validates the pools: names unique and non-empty, ranges inside 1..16777214, first <= last,
  // no overlap anywhere (within a pool or between pools).
  static Result<Allocator> create(std::vector<PoolSpec> pools,
                                  std::uint64_t hold_down_ms = kDefaultHoldDownMs);

  // Loads records read back from the store. Refuses duplicates (two records for one VNI, or
  // one network holding two live VNIs) rather than guessing which one is right.
  Status restore(const std::vector<Allocation>& records);

  // The VNI of `network`. Idempotent: a network that has (or recently released) a VNI gets the
  // same one back. `pinned` != 0 asks for that VNI and fails if another network has it (or
  // holds it down). Otherwise the pool the labels select provides the next free VNI.
  Result<Allocation> allocate(const std::string& network, const Labels& labels,
                              std::uint32_t pinned, std::uint64_t now_ms);

  // Releases the network's VNI; it is held down until now + hold_down before anyone else may
  // get it. Returns the held record. NOT_FOUND-style error when the network has none.
  Result<Allocation> release(const std::string& network, std::uint64_t now_ms);

  // Drops held records whose hold-down ended; returns their VNIs (to erase from the store).
  std::vector<std::uint32_t> expire(std::uint64_t now_ms);

  // Undo support for the caller when persisting a change failed.
  void put_record(const Allocation& record);
  void erase_record(std::uint32_t vni);

  // Pool the labels select: the matching pool with the most selector labels, earliest
  // declared on a tie.
  Result<const PoolSpec*> select_pool(const Labels& labels) const;

  const Allocation* find_network(const std::string& network) const;  // live (not held)
  const Allocation* find_vni(std::uint32_t vni) const;
  std::vector<Allocation> list() const;
  const std::vector<PoolSpec>& pools() const { return pools_; }
  std::uint64_t hold_down_ms() const { return hold_down_ms_; }
  // Allocations a pool refused because it was full, since start (metrics).
  std::uint64_t exhausted_count(const std::string& pool) const {
    auto it = exhausted_.find(pool);
    return it == exhausted_.end() ? 0 : it->second;
  }

  // Replaces pools and hold-down (config reload). Existing allocations are kept even when
  // their pool changed: a VNI in use is never taken away by a config edit.
  Status reconfigure(std::vector<PoolSpec> pools, std::uint64_t hold_down_ms);

 private:
  Allocator(std::vector<PoolSpec> pools, std::uint64_t hold_down_ms)
      : pools_(std::move(pools)), hold_down_ms_(hold_down_ms) {}
  Result<Allocation> allocate_from(const PoolSpec& pool, const std::string& network,
                                   std::uint64_t now_ms);
  const Allocation* find_held(const std::string& network) const;

  std::vector<PoolSpec> pools_;
  std::uint64_t hold_down_ms_;
  std::map<std::uint32_t, Allocation> by_vni_;
  std::map<std::string, std::uint32_t> live_by_network_;
  std::map<std::string, std::uint32_t> cursor_;  // next-fit position per pool
  std::map<std::string, std::uint64_t> exhausted_;  // refusals per pool
};

Status validate_pools(const std::vector<PoolSpec>& pools);

}  // namespace vxfed::vni
