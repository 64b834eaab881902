// A hash map from 64-bit keys to small values (at most 8 bytes) that workers read while the
// control thread changes it in place: open addressing with linear probing, one writer, readers
// without locks or retries.
//
// Why readers never see a half-applied entry:
// - A new entry's value is written before its key (release); a reader that matched the key
//   (acquire) reads that value or a later one.
// - A value is replaced by one atomic store: the old value or the new one.
// - An erased slot keeps its value and is marked dead; it becomes reusable only after a grace
//   period (retire() hands it to the Reclaimer), so a reader that matched the old key cannot
//   read a new key's value from it. Dead and reusable slots do not end a probe.
// - When erased slots and entries fill max_load_percent of the slots, the map is rebuilt
//   into a new slot array (sized for twice the entries) and the pointer is swapped; the old
//   array is freed after a grace period. A rebuild costs O(entries), once per that many
//   changes.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "dataplane/core/mapped_memory.hpp"
#include "dataplane/core/reclaimer.hpp"

namespace vxfed::dataplane {

template <typename V>
class RcuMap64 {
  static_assert(sizeof(V) <= 8 && std::is_trivially_copyable_v<V>, "values are one atomic word");

 public:
  // Keys are below 2^63; these three never are.
  static constexpr std::uint64_t kEmpty = ~0ull;  // never used: ends a probe
  static constexpr std::uint64_t kDead = ~1ull;   // erased, readers may still be on it
  static constexpr std::uint64_t kFree = ~2ull;   // erased a grace period ago: reusable

  explicit RcuMap64(unsigned max_load_percent = 50) : max_load_(max_load_percent) {
    table_.store(make_table(16), std::memory_order_relaxed);
  }
  ~RcuMap64() { delete table_.load(std::memory_order_relaxed); }
  RcuMap64(const RcuMap64&) = delete;
  RcuMap64& operator=(const RcuMap64&) = delete;

  // ---- readers (any thread, inside an RCU read-side section) ----
  [[gnu::always_inline]] bool find(std::uint64_t key, V* out) const {
    const Table* t = table_.load(std::memory_order_acquire);
    const Slot* slots = t->slots;
    for (std::uint64_t i = index(key, t->shift);; i = (i + 1) & t->mask) {
      const std::uint64_t k = __atomic_load_n(&slots[i].key, __ATOMIC_ACQUIRE);
      if (k == key) {
        *out = load_word(&slots[i].value);
        return true;
      }
      if (k == kEmpty) return false;
    }
  }
  [[gnu::always_inline]] std::optional<V> get(std::uint64_t key) const {  // inlined: the decap path's endpoint lookup
    V v;
    if (find(key, &v)) return v;
    return std::nullopt;
  }
  [[gnu::always_inline]] bool contains(std::uint64_t key) const {
    V v;
    return find(key, &v);
  }

  // ---- the writer (one thread) ----
  // Inserts or replaces the value of `key`. A rebuild hands the old slots to `reclaimer`.
  void assign(std::uint64_t key, V value, Reclaimer& reclaimer) {
    Table* t = table_.load(std::memory_order_relaxed);
    std::uint64_t reuse = kEmpty;
    std::uint64_t i = index(key, t->shift);
    for (;; i = (i + 1) & t->mask) {
      const std::uint64_t k = t->slots[i].key;
      if (k == key) {
        store_word(&t->slots[i].value, value);
        return;
      }
      if (k == kFree && reuse == kEmpty) reuse = i;
      if (k == kEmpty) break;
    }
    if (reuse == kEmpty) {
      if ((occupied_ + 1) * 100 > (t->mask + 1) * max_load_) {
        rebuild(reclaimer);
        assign(key, value, reclaimer);
        return;
      }
      reuse = i;
      ++occupied_;
    }
    Slot& s = t->slots[reuse];
    store_word(&s.value, value);
    __atomic_store_n(&s.key, key, __ATOMIC_RELEASE);
    ++live_;
  }

  // Erases `key` (false if absent). Its slot is reused only after retire() and a grace period.
  bool erase(std::uint64_t key) {
    Table* t = table_.load(std::memory_order_relaxed);
    for (std::uint64_t i = index(key, t->shift);; i = (i + 1) & t->mask) {
      const std::uint64_t k = t->slots[i].key;
      if (k == key) {
        __atomic_store_n(&t->slots[i].key, kDead, __ATOMIC_RELEASE);
        --live_;
        erased_.push_back(i);
        return true;
      }
      if (k == kEmpty) return false;
    }
  }

  // Hands the slots erased since the last call to the reclaimer: reusable after the grace period.
  void retire(Reclaimer& reclaimer) {
    if (erased_.empty()) return;
    Table* t = table_.load(std::memory_order_relaxed);
    reclaimer.defer([this, t, slots = std::move(erased_)] {
      if (table_.load(std::memory_order_relaxed) != t) return;  // rebuilt meanwhile: gone
      for (std::uint64_t i : slots)
        if (t->slots[i].key == kDead) t->slots[i].key = kFree;
    });
    erased_.clear();
  }

  std::size_t size() const { return live_; }
  std::size_t capacity() const { return table_.load(std::memory_order_relaxed)->mask + 1; }
  std::size_t resident_bytes() const { return table_.load(std::memory_order_relaxed)->region.resident_bytes(); }

  // Writer side: every entry, in slot order.
  template <typename F>
  void for_each(F&& f) const {
    const Table* t = table_.load(std::memory_order_relaxed);
    for (std::uint64_t i = 0; i <= t->mask; ++i)
      if (t->slots[i].key < kFree) f(t->slots[i].key, t->slots[i].value);
  }

 private:
  struct Slot {
    std::uint64_t key;
    alignas(8) V value;
  };
  struct Table {
    std::uint64_t mask;
    unsigned shift;
    Slot* slots;
    MappedRegion region;
  };

  [[gnu::always_inline]] static std::uint64_t index(std::uint64_t key, unsigned shift) {
    return ((key ^ (key >> 29)) * 0x9e3779b97f4a7c15ull) >> shift;
  }

  static Table* make_table(std::size_t cap) {
    auto* t = new Table{cap - 1, 64u - static_cast<unsigned>(std::countr_zero(cap)), nullptr,
                        MappedRegion(cap * sizeof(Slot))};
    t->slots = static_cast<Slot*>(t->region.data());
    for (std::size_t i = 0; i < cap; ++i) t->slots[i].key = kEmpty;  // values stay zero
    return t;
  }

  // A new slot array sized so that the live entries fill half of max_load, the swap, the old
  // array freed after a grace period.
  void rebuild(Reclaimer& reclaimer) {
    Table* old = table_.load(std::memory_order_relaxed);
    std::size_t cap = 16;
    while ((live_ + 1) * 200 > cap * max_load_) cap *= 2;
    Table* t = make_table(cap);
    std::size_t n = 0;
    for (std::uint64_t i = 0; i <= old->mask; ++i) {
      const Slot& s = old->slots[i];
      if (s.key >= kFree) continue;
      std::uint64_t j = index(s.key, t->shift);
      while (t->slots[j].key != kEmpty) j = (j + 1) & t->mask;
      t->slots[j].value = s.value;
      t->slots[j].key = s.key;
      ++n;
    }
    occupied_ = n;
    erased_.clear();
    table_.store(t, std::memory_order_release);
    reclaimer.defer([old] { delete old; });
  }

  unsigned max_load_;
  std::atomic<Table*> table_{nullptr};
  std::size_t live_ = 0;
  std::size_t occupied_ = 0;          // live + erased slots of the current table
  std::vector<std::uint64_t> erased_;  // since the last retire()
};

}  // namespace vxfed::dataplane
