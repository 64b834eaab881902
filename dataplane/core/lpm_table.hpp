// A DIR-24-8 longest-prefix-match table (the layout of DPDK's rte_lpm: a 2^24-entry first
// level indexed by the top 24 bits, 256-entry second-level groups for prefixes longer than
// /24) that the control thread changes in place while workers look up.
//
// Why not rte_lpm itself: rte_lpm_add scans every rule of the same depth, so 130,000 routes
// took 13 s to load (measured, perf: 83% in rte_lpm_add). Here a prefix is added or removed
// by repainting the entries it covers (one for a /24), and the caller keeps the rules: entry
// values are the caller's prefix ids, and insert() is told each id's length.
//
// Every entry also carries an `answer` beside the prefix id: 32 bits the caller defines and
// keeps equal for every entry of one prefix (the forwarding tables fold the prefix's
// PrefixInfo into it). A lookup then returns the answer with the prefix id in one 64-bit
// read, instead of the id and then a dependent read of a per-prefix array: with 130,000
// routes that array is a megabyte of randomly read lines (docs/dataplane-pipeline.md).
//
// The first level's answers are mirrored in a 32-bit array of their own (`answers24`: the
// entry's answer, or 0 for an empty entry or one pointing at a group), which is all the
// encapsulation's burst loop reads when the answer is direct: with 130,000 consecutive /24s
// the 64-bit first level spans 1 MiB, beyond this machine's 1 MiB L2 with everything else a
// burst touches; the mirror spans half of it (docs/dataplane-pipeline.md). A mirror entry is
// written right after its first-level entry, so a reader that finds a nonzero answer there
// holds an answer the entry had before or after a store, and one that finds 0 reads the
// first level (which is then at least as new).
//
// Why a lookup never sees a half-applied change: every entry is one 64-bit word written with
// one store, so a lookup reads an entry before or after the store. A new second-level group is
// filled before the first-level entry points at it; a group no longer needed is unlinked from
// the first level and reused only after a grace period (Reclaimer). A prefix covering many
// entries is painted entry by entry: while that goes on, some destinations of the prefix
// already resolve to it (or to its new answer) and others still to what they resolved to
// before — each destination to an answer that was valid before or after the change.
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
  // Second-level groups (2 KiB each) reserved up front: 2 GiB of address space, backed only
  // where used (every /24 block holding a prefix longer than /24 needs one).
  static constexpr std::uint32_t kMaxGroups = 1u << 20;

  LpmTable();

  // ---- readers ----
  // Value of the longest prefix containing ip (host order), or kNone.
  std::uint32_t lookup(std::uint32_t ip) const { return value_of(lookup_in(tbl24(), tbl8(), ip)); }
  // The entry of the longest prefix containing ip, on the raw levels (for burst loops that
  // keep them in registers): value_of() and answer_of() take it apart.
  [[gnu::always_inline]] static std::uint64_t lookup_in(const std::uint64_t* t24, const std::uint64_t* t8,
                                                        std::uint32_t ip) {
    std::uint64_t e = __atomic_load_n(&t24[ip >> 8], __ATOMIC_ACQUIRE);
    if (e & kGroup) [[unlikely]]
      e = __atomic_load_n(&t8[((static_cast<std::uint32_t>(e) & ~kGroup) << 8) | (ip & 0xff)], __ATOMIC_ACQUIRE);
    return e;
  }
  // The first level's answer for ip alone (the mirror): nonzero only when the first-level
  // entry holds a prefix (no group) with a nonzero answer; else 0 and the caller looks up
  // the entry (lookup_in).
  [[gnu::always_inline]] static std::uint32_t answer_in(const std::uint32_t* a24, std::uint32_t ip) {
    return __atomic_load_n(&a24[ip >> 8], __ATOMIC_ACQUIRE);
  }
  // The prefix id of an entry (kNone: no prefix contains the address).
  static std::uint32_t value_of(std::uint64_t entry) { return static_cast<std::uint32_t>(entry) - 1; }  // 0 -> kNone
  // The caller's answer of that prefix (0 where no prefix contains the address).
  static std::uint32_t answer_of(std::uint64_t entry) { return static_cast<std::uint32_t>(entry >> 32); }
  const std::uint64_t* tbl24() const { return tbl24_.data(); }
  const std::uint64_t* tbl8() const { return tbl8_.data(); }
  const std::uint32_t* answers24() const { return answers24_.data(); }
  // First-level address for ip: prefetch it ahead of lookup.
  const void* first_level(std::uint32_t ip) const { return tbl24() + (ip >> 8); }

  // ---- the writer (control thread) ----
  // Makes the prefix (addr host order, host bits zero; len 0..32) resolve to `value` (with
  // `answer`) wherever it is the longest: entries of its range that hold a shorter prefix
  // (depth[v] < len for value v) or nothing get it. The prefix must not be in the table yet.
  // False when no second-level group is left (nothing changed).
  bool insert(std::uint32_t addr, std::uint8_t len, std::uint32_t value, std::uint32_t answer,
              const std::uint8_t* depth);
  // Entries of the prefix's range that hold `value` get `replacement` with its answer (the
  // next shorter prefix, or kNone with answer 0).
  void erase(std::uint32_t addr, std::uint8_t len, std::uint32_t value, std::uint32_t replacement,
             std::uint32_t replacement_answer, Reclaimer& reclaimer);
  // Entries of the prefix's range that hold `value` get `answer`: the prefix's answer changed.
  // Costs the entries of its range (one for a /24).
  void set_answer(std::uint32_t addr, std::uint8_t len, std::uint32_t value, std::uint32_t answer);
  // Calls f(value) for every run of equal values in the prefix's range (second levels
  // included, kNone skipped): the prefixes inside it that some address resolves to.
  template <typename F>
  void for_each_value(std::uint32_t addr, std::uint8_t len, F&& f) const;

  // Second-level groups in use / free now.
  std::size_t groups() const { return next_group_ - free_groups_.size(); }
  std::size_t groups_available() const { return free_groups_.size() + (kMaxGroups - next_group_); }
  std::size_t resident_bytes() const {
    return tbl24_.resident_bytes() + tbl8_.resident_bytes() + answers24_.resident_bytes();
  }

 private:
  // In the low word of a first-level entry: the rest of the low word is a group index.
  static constexpr std::uint32_t kGroup = 1u << 31;
  static std::uint64_t make_entry(std::uint32_t value, std::uint32_t answer) {
    return (static_cast<std::uint64_t>(answer) << 32) | (value + 1);
  }
  // What the answers24 mirror holds for a first-level entry.
  static std::uint32_t mirrored(std::uint64_t entry) {
    return (static_cast<std::uint32_t>(entry) & kGroup) ? 0 : answer_of(entry);
  }
  // The first-level entry i becomes `entry`, then its mirror.
  void store24(std::uint32_t i, std::uint64_t entry) {
    __atomic_store_n(&tbl24_.data()[i], entry, __ATOMIC_RELEASE);
    __atomic_store_n(&answers24_.data()[i], mirrored(entry), __ATOMIC_RELEASE);
  }
  // `mirror`: the answers24 entries of `entries` when they are first-level ones, else null.
  void paint(std::uint64_t* entries, std::uint32_t count, std::uint64_t entry, std::uint8_t len,
             const std::uint8_t* depth, std::uint32_t* mirror);
  // Entries whose value is `from` (value + 1, in the low word) become `to`.
  static void replace(std::uint64_t* entries, std::uint32_t count, std::uint32_t from, std::uint64_t to);
  // Calls replace() on every entry of the prefix's range, first level and groups.
  void replace_in_range(std::uint32_t addr, std::uint8_t len, std::uint32_t from, std::uint64_t to);

  // Low word: value + 1, or group | kGroup (first level only); 0 = empty. High word: answer.
  StableArray<std::uint64_t> tbl24_;
  StableArray<std::uint64_t> tbl8_;   // groups of 256 entries
  StableArray<std::uint32_t> answers24_;  // mirrored(tbl24_[i])
  std::vector<std::uint16_t> group_prefixes_;  // prefixes longer than /24 painted in each group
  std::vector<std::uint32_t> free_groups_;
  std::uint32_t next_group_ = 0;
};

template <typename F>
void LpmTable::for_each_value(std::uint32_t addr, std::uint8_t len, F&& f) const {
  std::uint32_t last = 0;
  auto visit = [&](std::uint64_t entry) {
    const auto e = static_cast<std::uint32_t>(entry);
    if (e != last && e != 0) f(e - 1);
    last = e;
  };
  const std::uint64_t* t24 = tbl24();
  const std::uint64_t* t8 = tbl8();
  if (len > 24) {
    const auto e = static_cast<std::uint32_t>(t24[addr >> 8]);
    if (!(e & kGroup)) return visit(e);
    const std::uint64_t* g = t8 + (std::size_t{e & ~kGroup} << 8);
    for (std::uint32_t i = addr & 0xff, n = i + (1u << (32 - len)); i < n; ++i) visit(g[i]);
    return;
  }
  for (std::uint32_t i = addr >> 8, n = i + (1u << (24 - len)); i < n; ++i) {
    const auto e = static_cast<std::uint32_t>(t24[i]);
    if (!(e & kGroup)) {
      visit(t24[i]);
      continue;
    }
    const std::uint64_t* g = t8 + (std::size_t{e & ~kGroup} << 8);
    for (std::uint32_t k = 0; k < 256; ++k) visit(g[k]);
  }
}

}  // namespace vxfed::dataplane
