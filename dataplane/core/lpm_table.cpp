#include "dataplane/core/lpm_table.hpp"

#include <algorithm>

namespace vxfed::dataplane {

// The first level on transparent huge pages (where THP is "madvise" or "always"): lookups over
// 130k spread-out routes then miss the TLB on a few 2 MiB pages instead of hundreds of 4 KiB
// ones.
LpmTable::LpmTable() : tbl24_(std::size_t{1} << 24, /*huge_pages=*/true), tbl8_(std::size_t{kMaxGroups} << 8) {}

void LpmTable::paint(std::uint32_t* entries, std::uint32_t count, std::uint32_t value, std::uint8_t len,
                     const std::uint8_t* depth) {
  const std::uint32_t v = value + 1;
  // Runs of one value are common (a /16 over empty space): one depth look-up per run.
  std::uint32_t last = ~0u;
  bool shallower = false;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t e = entries[i];
    if (e != last) {
      last = e;
      shallower = e == 0 || depth[e - 1] < len;
    }
    if (shallower) __atomic_store_n(&entries[i], v, __ATOMIC_RELEASE);
  }
}

void LpmTable::replace(std::uint32_t* entries, std::uint32_t count, std::uint32_t from, std::uint32_t to) {
  for (std::uint32_t i = 0; i < count; ++i)
    if (entries[i] == from) __atomic_store_n(&entries[i], to, __ATOMIC_RELEASE);
}

bool LpmTable::insert(std::uint32_t addr, std::uint8_t len, std::uint32_t value, const std::uint8_t* depth) {
  std::uint32_t* t24 = tbl24_.data();
  std::uint32_t* t8 = tbl8_.data();
  if (len <= 24) {
    const std::uint32_t first = addr >> 8;
    const std::uint32_t count = 1u << (24 - len);
    // First-level entries outside groups in runs, then the groups the range contains.
    std::uint32_t run = first;
    for (std::uint32_t i = first; i < first + count; ++i) {
      if (!(t24[i] & kGroup)) continue;
      paint(t24 + run, i - run, value, len, depth);
      paint(t8 + ((t24[i] & ~kGroup) << 8), 256, value, len, depth);
      run = i + 1;
    }
    paint(t24 + run, first + count - run, value, len, depth);
    return true;
  }
  std::uint32_t& slot = t24[addr >> 8];
  std::uint32_t group;
  if (slot & kGroup) {
    group = slot & ~kGroup;
  } else {
    if (!free_groups_.empty()) {
      group = free_groups_.back();
      free_groups_.pop_back();
    } else if (next_group_ < kMaxGroups) {
      group = next_group_++;
      group_prefixes_.push_back(0);
    } else {
      return false;
    }
    // Filled with what the block resolves to now, before the first level points at it.
    std::fill(t8 + (group << 8), t8 + (group << 8) + 256, slot);
    __atomic_store_n(&slot, group | kGroup, __ATOMIC_RELEASE);
  }
  ++group_prefixes_[group];
  paint(t8 + (group << 8) + (addr & 0xff), 1u << (32 - len), value, len, depth);
  return true;
}

void LpmTable::erase(std::uint32_t addr, std::uint8_t len, std::uint32_t value, std::uint32_t replacement,
                     Reclaimer& reclaimer) {
  std::uint32_t* t24 = tbl24_.data();
  std::uint32_t* t8 = tbl8_.data();
  const std::uint32_t from = value + 1, to = replacement + 1;  // kNone + 1 == 0: empty
  if (len <= 24) {
    const std::uint32_t first = addr >> 8;
    const std::uint32_t count = 1u << (24 - len);
    for (std::uint32_t i = first; i < first + count; ++i) {
      const std::uint32_t e = t24[i];
      if (e & kGroup) {
        replace(t8 + ((e & ~kGroup) << 8), 256, from, to);
      } else if (e == from) {
        __atomic_store_n(&t24[i], to, __ATOMIC_RELEASE);
      }
    }
    return;
  }
  std::uint32_t& slot = t24[addr >> 8];
  if (!(slot & kGroup)) return;  // not painted: nothing to do
  const std::uint32_t group = slot & ~kGroup;
  replace(t8 + (group << 8) + (addr & 0xff), 1u << (32 - len), from, to);
  if (--group_prefixes_[group] != 0) return;
  // No prefix longer than /24 left in the block: every entry now holds the block's cover.
  __atomic_store_n(&slot, t8[group << 8], __ATOMIC_RELEASE);
  reclaimer.defer([this, group] { free_groups_.push_back(group); });
}

}  // namespace vxfed::dataplane
