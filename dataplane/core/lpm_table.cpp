#include "dataplane/core/lpm_table.hpp"

#include <algorithm>

namespace vxfed::dataplane {

// The first level on 4 KiB pages, not transparent huge pages: a worker's lookup of a range no
// route painted (a pod sending anywhere, a reverse-path source) faulted a zeroed 2 MiB page
// in, for good — up to the whole 128 MiB under the soak's pod churn with no table change at
// all (docs/faults.md, "Soak"). On 4 KiB pages such a read maps the shared zero page and costs
// nothing; the pipeline benchmark's 130k routes measured no difference (29.5 cycles either way
// at 8950 B, docs/dataplane-pipeline.md).
LpmTable::LpmTable()
    : tbl24_(std::size_t{1} << 24, /*huge_pages=*/false),
      tbl8_(std::size_t{kMaxGroups} << 8),
      answers24_(std::size_t{1} << 24, /*huge_pages=*/false) {}

void LpmTable::paint(std::uint64_t* entries, std::uint32_t count, std::uint64_t entry, std::uint8_t len,
                     const std::uint8_t* depth, std::uint32_t* mirror) {
  const std::uint32_t answer = mirrored(entry);
  // Runs of one value are common (a /16 over empty space): one depth look-up per run.
  std::uint32_t last = ~0u;
  bool shallower = false;
  for (std::uint32_t i = 0; i < count; ++i) {
    const auto e = static_cast<std::uint32_t>(entries[i]);
    if (e != last) {
      last = e;
      shallower = e == 0 || depth[e - 1] < len;
    }
    if (!shallower) continue;
    __atomic_store_n(&entries[i], entry, __ATOMIC_RELEASE);
    if (mirror) __atomic_store_n(&mirror[i], answer, __ATOMIC_RELEASE);
  }
}

void LpmTable::replace(std::uint64_t* entries, std::uint32_t count, std::uint32_t from, std::uint64_t to) {
  for (std::uint32_t i = 0; i < count; ++i)
    if (static_cast<std::uint32_t>(entries[i]) == from) __atomic_store_n(&entries[i], to, __ATOMIC_RELEASE);
}

void LpmTable::replace_in_range(std::uint32_t addr, std::uint8_t len, std::uint32_t from, std::uint64_t to) {
  std::uint64_t* t24 = tbl24_.data();
  std::uint64_t* t8 = tbl8_.data();
  if (len <= 24) {
    const std::uint32_t first = addr >> 8;
    const std::uint32_t count = 1u << (24 - len);
    for (std::uint32_t i = first; i < first + count; ++i) {
      const auto e = static_cast<std::uint32_t>(t24[i]);
      if (e & kGroup) {
        replace(t8 + (std::size_t{e & ~kGroup} << 8), 256, from, to);
      } else if (e == from) {
        store24(i, to);
      }
    }
    return;
  }
  const auto slot = static_cast<std::uint32_t>(t24[addr >> 8]);
  if (!(slot & kGroup)) return;  // not painted: nothing to do
  replace(t8 + (std::size_t{slot & ~kGroup} << 8) + (addr & 0xff), 1u << (32 - len), from, to);
}

bool LpmTable::insert(std::uint32_t addr, std::uint8_t len, std::uint32_t value, std::uint32_t answer,
                      const std::uint8_t* depth) {
  std::uint64_t* t24 = tbl24_.data();
  std::uint64_t* t8 = tbl8_.data();
  const std::uint64_t entry = make_entry(value, answer);
  if (len <= 24) {
    const std::uint32_t first = addr >> 8;
    const std::uint32_t count = 1u << (24 - len);
    // First-level entries outside groups in runs, then the groups the range contains.
    std::uint32_t run = first;
    for (std::uint32_t i = first; i < first + count; ++i) {
      const auto e = static_cast<std::uint32_t>(t24[i]);
      if (!(e & kGroup)) continue;
      paint(t24 + run, i - run, entry, len, depth, answers24_.data() + run);
      paint(t8 + (std::size_t{e & ~kGroup} << 8), 256, entry, len, depth, nullptr);
      run = i + 1;
    }
    paint(t24 + run, first + count - run, entry, len, depth, answers24_.data() + run);
    return true;
  }
  std::uint64_t& slot = t24[addr >> 8];
  std::uint32_t group;
  if (static_cast<std::uint32_t>(slot) & kGroup) {
    group = static_cast<std::uint32_t>(slot) & ~kGroup;
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
    // Filled with what the block resolves to now (prefix and answer), before the first level
    // points at it.
    std::fill(t8 + (std::size_t{group} << 8), t8 + (std::size_t{group} << 8) + 256, slot);
    store24(addr >> 8, std::uint64_t{group | kGroup});
  }
  ++group_prefixes_[group];
  paint(t8 + (std::size_t{group} << 8) + (addr & 0xff), 1u << (32 - len), entry, len, depth, nullptr);
  return true;
}

void LpmTable::erase(std::uint32_t addr, std::uint8_t len, std::uint32_t value, std::uint32_t replacement,
                     std::uint32_t replacement_answer, Reclaimer& reclaimer) {
  // kNone + 1 == 0: empty, and an empty entry carries no answer.
  const std::uint64_t to = replacement == kNone ? 0 : make_entry(replacement, replacement_answer);
  replace_in_range(addr, len, value + 1, to);
  if (len <= 24) return;
  std::uint64_t* t8 = tbl8_.data();
  std::uint64_t& slot = tbl24_.data()[addr >> 8];
  if (!(static_cast<std::uint32_t>(slot) & kGroup)) return;
  const std::uint32_t group = static_cast<std::uint32_t>(slot) & ~kGroup;
  if (--group_prefixes_[group] != 0) return;
  // No prefix longer than /24 left in the block: every entry now holds the block's cover.
  store24(addr >> 8, t8[std::size_t{group} << 8]);
  reclaimer.defer([this, group] { free_groups_.push_back(group); });
}

void LpmTable::set_answer(std::uint32_t addr, std::uint8_t len, std::uint32_t value, std::uint32_t answer) {
  replace_in_range(addr, len, value + 1, make_entry(value, answer));
}

}  // namespace vxfed::dataplane
