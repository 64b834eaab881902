// An immutable-after-build open-addressing hash map from 64-bit keys, for the forwarding
// tables: built on the control thread, then read by workers with one or two cache-line
// accesses per lookup (linear probing, load factor <= 1/2, multiplicative hash).
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace vxfed::dataplane {

template <typename V>
class FlatMap64 {
 public:
  static constexpr std::uint64_t kEmptyKey = ~0ull;  // callers' keys never use all ones

  FlatMap64() { reserve(0); }  // never without slots: lookups need no emptiness check

  // Sizes the map for `expected` entries; call before inserting.
  void reserve(std::size_t expected) {
    std::size_t cap = std::bit_ceil(expected * 2 + 2);
    if (cap < 16) cap = 16;
    slots_.assign(cap, Slot{kEmptyKey, V{}});
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(cap));
    mask_ = cap - 1;
    size_ = 0;
  }

  // False if the key is present already (value left unchanged) or the map is full.
  bool insert(std::uint64_t key, const V& value) {
    if (size_ * 2 + 2 > slots_.size()) return false;
    for (std::uint64_t i = index(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return false;
      if (slots_[i].key == kEmptyKey) {
        slots_[i] = Slot{key, value};
        ++size_;
        return true;
      }
    }
  }

  V* find_mutable(std::uint64_t key) {
    return const_cast<V*>(static_cast<const FlatMap64*>(this)->find(key));
  }

  [[gnu::always_inline]] const V* find(std::uint64_t key) const {
    const Slot* slots = slots_.data();
    for (std::uint64_t i = index(key);; i = (i + 1) & mask_) {
      const Slot& s = slots[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmptyKey) return nullptr;
    }
  }

  std::size_t size() const { return size_; }

  template <typename F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.key != kEmptyKey) f(s.key, s.value);
  }

 private:
  struct Slot {
    std::uint64_t key;
    V value;
  };
  [[gnu::always_inline]] std::uint64_t index(std::uint64_t key) const {
    return ((key ^ (key >> 29)) * 0x9e3779b97f4a7c15ull) >> shift_;
  }
  std::vector<Slot> slots_;
  unsigned shift_ = 60;
  std::uint64_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace vxfed::dataplane
