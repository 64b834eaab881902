// Gives memory that large table changes freed back to the kernel. A federation's route burst
// (130,000 routes from zebra's resync) passes through buffers many times the size of what
// vxfedd keeps (the FPM batch, the RouteUpdate, the TablesDelta, the Deltas' protobuf); glibc
// keeps the freed pages in its heap, so vxfedd's resident memory would stay at the burst's
// high-water mark. After changes of at least `threshold` entries, one malloc_trim(0) runs
// `delay` later (one per delay at most, whatever the number of batches meanwhile: a trim
// walks the whole heap, a few milliseconds at 100 MB).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>  // before asio: boost 1.74 awaitable.hpp needs std::exchange

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace vxfed::control {

class MemoryTrim {
 public:
  MemoryTrim(boost::asio::io_context& io, std::size_t threshold = 1024,
             std::chrono::milliseconds delay = std::chrono::milliseconds(1000))
      : timer_(io), threshold_(threshold), delay_(delay) {}

  // `entries` table entries just changed.
  void changed(std::size_t entries);
  std::uint64_t trims() const { return trims_; }

 private:
  boost::asio::steady_timer timer_;
  std::size_t threshold_;
  std::chrono::milliseconds delay_;
  std::size_t pending_ = 0;
  bool armed_ = false;
  std::uint64_t trims_ = 0;
};

}  // namespace vxfed::control
