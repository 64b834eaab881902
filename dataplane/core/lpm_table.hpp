// A DIR-24-8 longest-prefix-match table (the layout of DPDK's rte_lpm: a 2^24-entry first
// level indexed by the top 24 bits, 256-entry second-level groups for prefixes longer than
// /24) that the control thread changes in place while workers look up.
//
// Why not rte_lpm itself: rte_lpm_add scans every rule of the same depth, so 130,000 routes
// took 13 s to load (measured, perf: 83% in rte_lpm_add). Here a prefix is added or removed
// by repainting the entries it covers (one for a /24), and the caller keeps the rules: entry
// values are the caller's prefix ids, and insert() is told each id's length.
//
// Why a lookup never sees a half-applied change: every entry is one 32-bit word written with
// one store, so a lookup reads an entry before or after the store. A new second-level group is
// filled before the first-level entry points at it; a group no longer needed is unlinked from
// the first level and reused only after a grace period (Reclaimer). A prefix covering many
// entries is painted entry by entry: while that goes on, some destinations of the prefix
// already resolve to it and others still to what they resolved to before — each destination
// to an answer that was valid before or after the change.
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/core/mapped_memory.hpp"
#include "dataplane/core/reclaimer.hpp"

namespace vxfed::dataplane {

class LpmTable {
 public:
  static constexpr std::uint32_t kNone = ~0u;
  static constexpr std::uint32_t kMaxValue = (1u << 31) - 2;
  // Second-level groups (1 KiB each) reserved up front: 1 GiB of address space, backed only
  // where used (every /24 block holding a prefix longer than /24 needs one).
  static constexpr std::uint32_t kMaxGroups = 1u << 20;

  LpmTable();

  // ---- readers ----
  // Value of the longest prefix containing ip (host order), or kNone.
  std::uint32_t lookup(std::uint32_t ip) const { return lookup_in(tbl24(), tbl8(), ip); }
  // The same on the raw levels (for burst loops that keep them in registers).
  [[gnu::always_inline]] static std::uint32_t lookup_in(const std::uint32_t* t24, const std::uint32_t* t8,
                                                        std::uint32_t ip) {
    std::uint32_t e = __atomic_load_n(&t24[ip >> 8], __ATOMIC_ACQUIRE);
    if (e & kGroup) [[unlikely]] e = __atomic_load_n(&t8[((e & ~kGroup) << 8) | (ip & 0xff)], __ATOMIC_ACQUIRE);
    return e - 1;  // 0 (empty) becomes kNone
  }
  const std::uint32_t* tbl24() const { return tbl24_.data(); }
  const std::uint32_t* tbl8() const { return tbl8_.data(); }
  // First-level address for ip: prefetch it ahead of lookup.
  const void* first_level(std::uint32_t ip) const { return tbl24() + (ip >> 8); }

  // ---- the writer (control thread) ----
  // Makes the prefix (addr host order, host bits zero; len 0..32) resolve to `value` wherever
  // it is the longest: entries of its range that hold a shorter prefix (depth[v] < len for
  // value v) or nothing get `value`. The prefix must not be in the table yet. False when no
  // second-level group is left (nothing changed).
  bool insert(std::uint32_t addr, std::uint8_t len, std::uint32_t value, const std::uint8_t* depth);
  // Entries of the prefix's range that hold `value` get `replacement` (the value of its next
  // shorter prefix, or kNone).
  void erase(std::uint32_t addr, std::uint8_t len, std::uint32_t value, std::uint32_t replacement,
             Reclaimer& reclaimer);
  // Calls f(value) for every run of equal values in the prefix's range (second levels
  // included, kNone skipped): the prefixes inside it that some address resolves to.
  template <typename F>
  void for_each_value(std::uint32_t addr, std::uint8_t len, F&& f) const;

  // Second-level groups in use / free now.
  std::size_t groups() const { return next_group_ - free_groups_.size(); }
  std::size_t groups_available() const { return free_groups_.size() + (kMaxGroups - next_group_); }
  std::size_t resident_bytes() const { return tbl24_.resident_bytes() + tbl8_.resident_bytes(); }

 private:
  static constexpr std::uint32_t kGroup = 1u << 31;
  void paint(std::uint32_t* entries, std::uint32_t count, std::uint32_t value, std::uint8_t len,
             const std::uint8_t* depth);
  static void replace(std::uint32_t* entries, std::uint32_t count, std::uint32_t from, std::uint32_t to);

  StableArray<std::uint32_t> tbl24_;  // value + 1, or group | kGroup; 0 = empty
  StableArray<std::uint32_t> tbl8_;   // groups of 256 entries: value + 1; 0 = empty
  std::vector<std::uint16_t> group_prefixes_;  // prefixes longer than /24 painted in each group
  std::vector<std::uint32_t> free_groups_;
  std::uint32_t next_group_ = 0;
};

template <typename F>
void LpmTable::for_each_value(std::uint32_t addr, std::uint8_t len, F&& f) const {
  std::uint32_t last = 0;
  auto visit = [&](std::uint32_t e) {
    if (e != last && e != 0) f(e - 1);
    last = e;
  };
  const std::uint32_t* t24 = tbl24();
  const std::uint32_t* t8 = tbl8();
  if (len > 24) {
    const std::uint32_t e = t24[addr >> 8];
    if (!(e & kGroup)) return visit(e);
    const std::uint32_t* g = t8 + ((e & ~kGroup) << 8);
    for (std::uint32_t i = addr & 0xff, n = i + (1u << (32 - len)); i < n; ++i) visit(g[i]);
    return;
  }
  for (std::uint32_t i = addr >> 8, n = i + (1u << (24 - len)); i < n; ++i) {
    const std::uint32_t e = t24[i];
    if (!(e & kGroup)) {
      visit(e);
      continue;
    }
    const std::uint32_t* g = t8 + ((e & ~kGroup) << 8);
    for (std::uint32_t k = 0; k < 256; ++k) visit(g[k]);
  }
}

}  // namespace vxfed::dataplane
