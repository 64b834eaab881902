// Address space reserved once and backed lazily: the tables' arrays live in such regions so
// that they never move (a worker may hold a pointer into one while the control thread
// appends) and cost resident memory only for the pages actually written. StableArray<T> is
// an array of fixed capacity on one; resident_bytes() reports what is really in RAM
// (mincore), for the tables' memory figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace vxfed::dataplane {

class MappedRegion {
 public:
  MappedRegion() = default;
  // Reserves `bytes` of zero-filled, lazily backed memory (MAP_NORESERVE). huge_pages: 2 MiB
  // aligned and advised for transparent huge pages. Throws std::bad_alloc when the address
  // space cannot be reserved.
  explicit MappedRegion(std::size_t bytes, bool huge_pages = false);
  ~MappedRegion();
  MappedRegion(MappedRegion&& o) noexcept : base_(std::exchange(o.base_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  MappedRegion& operator=(MappedRegion&& o) noexcept;
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  void* data() const { return base_; }
  std::size_t size() const { return bytes_; }
  // Bytes of the region resident in RAM now.
  std::size_t resident_bytes() const;

 private:
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
};

// Fixed-capacity array of trivially copyable T on a MappedRegion: elements start zeroed,
// never move, and cost memory only once written.
template <typename T>
class StableArray {
  static_assert(std::is_trivially_copyable_v<T>, "StableArray holds plain data");

 public:
  StableArray() = default;
  explicit StableArray(std::size_t capacity, bool huge_pages = false)
      : region_(capacity * sizeof(T), huge_pages), capacity_(capacity) {}
  T* data() const { return static_cast<T*>(region_.data()); }
  T& operator[](std::size_t i) const { return data()[i]; }
  std::size_t capacity() const { return capacity_; }
  std::size_t resident_bytes() const { return region_.resident_bytes(); }

 private:
  MappedRegion region_;
  std::size_t capacity_ = 0;
};

// One element of a table read by workers while the control thread writes it: whole-word
// atomic loads and stores (T of 1, 2, 4 or 8 bytes, naturally aligned: plain moves on x86),
// so a reader sees the old value or the new one, never a mix.
template <typename T>
[[gnu::always_inline]] inline T load_word(const T* p) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  T out;
  __atomic_load(p, &out, __ATOMIC_ACQUIRE);
  return out;
}
template <typename T>
[[gnu::always_inline]] inline void store_word(T* p, T value) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  __atomic_store(p, &value, __ATOMIC_RELEASE);
}

}  // namespace vxfed::dataplane
