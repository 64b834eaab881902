// Allocators of the tables' dense indices (network, VTEP, prefix, group, endpoint slot) and of
// next-hop slot blocks. What is released goes back to the free list only after a grace period
// (retire() hands it to the Reclaimer): a worker that read an index just before it was
// released must not find it reused by another entry.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

#include "dataplane/core/reclaimer.hpp"

namespace vxfed::dataplane {

class IndexPool {
 public:
  explicit IndexPool(std::uint32_t capacity) : capacity_(capacity) {}
  std::optional<std::uint32_t> alloc() {
    if (!free_.empty()) {
      const std::uint32_t i = free_.back();
      free_.pop_back();
      return i;
    }
    if (next_ < capacity_) return next_++;
    return std::nullopt;
  }
  void release_later(std::uint32_t i) { pending_.push_back(i); }
  void retire(Reclaimer& reclaimer) {
    if (pending_.empty()) return;
    reclaimer.defer([this, released = std::move(pending_)] { free_.insert(free_.end(), released.begin(), released.end()); });
    pending_.clear();
  }
  // Indices alloc() can hand out now, and once what is pending has been reclaimed.
  std::uint32_t available() const { return static_cast<std::uint32_t>(capacity_ - next_ + free_.size()); }
  std::uint32_t available_after_grace() const { return available() + static_cast<std::uint32_t>(pending_.size()); }
  std::uint32_t high_water() const { return next_; }

 private:
  std::uint32_t capacity_;
  std::uint32_t next_ = 0;
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> pending_;
};

// Blocks of 1, 2, 4 ... 65536 consecutive slots out of `capacity`, by size class.
class BlockPool {
 public:
  static constexpr unsigned kClasses = 17;
  explicit BlockPool(std::uint32_t capacity) : capacity_(capacity) {}
  static unsigned size_class(std::uint32_t count) { return static_cast<unsigned>(std::bit_width(count - 1)); }
  std::optional<std::uint32_t> alloc(std::uint32_t count) {
    const unsigned c = size_class(count);
    if (!free_[c].empty()) {
      const std::uint32_t first = free_[c].back();
      free_[c].pop_back();
      return first;
    }
    const std::uint32_t size = 1u << c;
    if (capacity_ - next_ < size) return std::nullopt;
    const std::uint32_t first = next_;
    next_ += size;
    return first;
  }
  void release_later(std::uint32_t first, std::uint32_t count) { pending_.emplace_back(first, size_class(count)); }
  void retire(Reclaimer& reclaimer) {
    if (pending_.empty()) return;
    reclaimer.defer([this, released = std::move(pending_)] {
      for (const auto& [first, c] : released) free_[c].push_back(first);
    });
    pending_.clear();
  }
  // Whether blocks[c] more blocks of each size class c can be had now.
  bool can_alloc(const std::array<std::uint32_t, kClasses>& blocks) const {
    std::uint64_t fresh = 0;
    for (unsigned c = 0; c < kClasses; ++c)
      if (blocks[c] > free_[c].size()) fresh += std::uint64_t{blocks[c] - free_[c].size()} << c;
    return fresh <= capacity_ - next_;
  }

 private:
  std::uint32_t capacity_;
  std::uint32_t next_ = 0;
  std::array<std::vector<std::uint32_t>, kClasses> free_;
  std::vector<std::pair<std::uint32_t, unsigned>> pending_;
};

}  // namespace vxfed::dataplane
