// The workers' side of packet capture (docs/dataplane.md, "Packet capture"): while a capture
// runs, the packets of one port are copied into a ring per worker that the control thread
// empties (capture_session.hpp). Off, it costs a worker one load per loop (acquire: a plain
// load on x86) and one compare per burst; on, the other ports pay only that compare. The copy (at most snaplen
// bytes) happens on the worker, before the pipeline for received packets and just before the
// port takes them for sent ones, so the capture shows what the forwarder saw and sent.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <rte_mbuf.h>

namespace vxfed::dataplane {

// One worker's ring: single producer (the worker), single consumer (the control thread),
// fixed slots. A full ring drops the new packet and counts it; it never waits.
class CaptureRing {
 public:
  struct Record {
    std::uint64_t tsc;
    std::uint32_t original_length;
    std::uint16_t length;  // bytes of data that follow (<= snaplen)
    std::uint8_t sent;
    std::uint8_t pad;
  };
  static_assert(sizeof(Record) == 16);

  CaptureRing(std::uint32_t snaplen, std::size_t bytes);

  std::uint32_t snaplen() const { return snaplen_; }
  std::size_t slots() const { return slots_; }

  // Worker: copies the packet (or its first snaplen bytes). False when the ring is full.
  bool push(const rte_mbuf* m, std::uint64_t tsc, bool sent);

  // Control thread: calls take(const Record&, const std::uint8_t* data) for each packet the
  // worker published, oldest first, and frees their slots.
  template <typename Take>
  std::size_t drain(Take&& take) {
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const std::size_t n = head - tail;
    for (; tail != head; ++tail) {
      const std::uint8_t* slot = slot_at(tail);
      take(*reinterpret_cast<const Record*>(slot), slot + sizeof(Record));
    }
    tail_.store(tail, std::memory_order_release);
    return n;
  }

  std::uint64_t full_drops() const { return full_drops_.load(std::memory_order_relaxed); }

 private:
  std::uint8_t* slot_at(std::uint64_t i) const { return memory_.get() + (i % slots_) * slot_bytes_; }

  std::uint32_t snaplen_;
  std::size_t slot_bytes_;
  std::size_t slots_;
  std::unique_ptr<std::uint8_t[]> memory_;
  alignas(64) std::atomic<std::uint64_t> head_{0};  // written by the worker
  std::atomic<std::uint64_t> full_drops_{0};        // written by the worker
  alignas(64) std::atomic<std::uint64_t> tail_{0};  // written by the control thread
};

// What the workers read: which port is captured (kNoCapture: none), in which directions, and
// each worker's ring. The control thread fills rings and directions before it publishes the
// port (release), and takes the port away and waits for a grace period before it touches
// the rings again: a worker uses them only within one loop, between quiescent reports.
struct CaptureTap {
  static constexpr std::uint32_t kNoCapture = ~0u;
  static constexpr unsigned kMaxWorkers = 16;  // as --queues

  std::atomic<std::uint32_t> port{kNoCapture};
  bool received = true;
  bool sent = true;
  CaptureRing* rings[kMaxWorkers] = {};

  // The port captured now, read once per worker loop.
  std::uint32_t current() const { return port.load(std::memory_order_acquire); }
};

// Worker: copies the burst into this worker's ring when `port` is the captured one. The
// check is inline; the copy is out of line and cold.
[[gnu::cold, gnu::noinline]] void capture_burst(CaptureTap& tap, unsigned worker, rte_mbuf* const* pkts,
                                               unsigned n, bool sent);

inline void capture_if(CaptureTap* tap, std::uint32_t captured, std::uint32_t port, unsigned worker,
                       rte_mbuf* const* pkts, unsigned n, bool sent) {
  if (captured == port) [[unlikely]]
    capture_burst(*tap, worker, pkts, n, sent);
}

}  // namespace vxfed::dataplane
