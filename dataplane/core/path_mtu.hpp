// Path MTUs toward remote VTEPs, learned from the underlay's ICMP fragmentation-needed.
//
// Every outer packet leaves with DF set (wire/vxlan.hpp), so a router whose next link is
// smaller than the packet drops it and answers the sender — our VTEP — with ICMP
// "fragmentation needed" naming that link's MTU (RFC 1191). Like Linux's route exceptions
// (what its vxlan driver relies on), the lowered MTU is kept per destination VTEP for 10
// minutes and then forgotten, so a path that grew again is found again; the encapsulation
// answers a pod's packet that no longer fits with an ICMP fragmentation-needed of its own,
// naming the inner size that fits (docs/dataplane-pipeline.md, "Too big for the tunnel").
//
// Fixed slots of one atomic 64-bit word each (VTEP address, MTU, expiry): workers learn from
// the ICMP they receive (rare) and look up while encapsulating only when some exception is
// in force (any(): one load per burst otherwise); the control thread advances the clock and
// clears expired slots. A reader sees a slot before or after a store, never a torn entry.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace vxfed::dataplane {

class PathMtuCache {
 public:
  static constexpr std::uint32_t kSlots = 1024;      // exceptions in force at once
  static constexpr std::uint32_t kProbes = 8;        // slots a VTEP may occupy (from its hash)
  static constexpr std::uint16_t kMinMtu = 552;      // smaller answers are raised to it (Linux's min_pmtu)
  static constexpr std::uint32_t kLifetimeSeconds = 600;  // Linux's mtu_expires

  struct Exception {
    std::uint32_t vtep_ip_be = 0;
    std::uint16_t mtu = 0;                 // outer IPv4 MTU toward the VTEP
    std::uint32_t expires_in_s = 0;
  };

  // ---- workers ----
  // Whether any exception is in force (read once per burst).
  bool any() const { return active_.load(std::memory_order_relaxed) != 0; }
  // Outer MTU toward the VTEP (network order) when lowered; 0 when not.
  std::uint16_t lookup(std::uint32_t vtep_ip_be) const {
    const std::uint32_t h = home(vtep_ip_be);
    for (std::uint32_t i = 0; i < kProbes; ++i) {
      const std::uint64_t w = words_[(h + i) % kSlots].load(std::memory_order_acquire);
      if (ip_of(w) == vtep_ip_be) return mtu_of(w);
    }
    return 0;
  }
  // An ICMP fragmentation-needed said `mtu` toward the VTEP (already validated by the caller;
  // raised to kMinMtu). Like Linux, only lowers: an answer at or above the MTU in force
  // refreshes an equal exception's lifetime and changes nothing else. Returns whether the
  // path MTU toward the VTEP went down. False also when its kProbes slots are all taken.
  bool learn(std::uint32_t vtep_ip_be, std::uint16_t mtu, std::uint16_t underlay_mtu);

  // ---- control thread ----
  // Advances the clock to `now_s` (seconds, any origin, non-decreasing) and clears the
  // exceptions that expired. Call about once a second.
  void tick(std::uint32_t now_s);
  // The exceptions in force (for the status and the log).
  std::vector<Exception> exceptions() const;

 private:
  static std::uint32_t home(std::uint32_t ip) { return (ip * 0x9e3779b1u) >> 22; }  // 10 bits: kSlots
  static std::uint32_t ip_of(std::uint64_t w) { return static_cast<std::uint32_t>(w >> 32); }
  static std::uint16_t mtu_of(std::uint64_t w) { return static_cast<std::uint16_t>(w >> 16); }
  static std::uint16_t expiry_of(std::uint64_t w) { return static_cast<std::uint16_t>(w); }
  static std::uint64_t make(std::uint32_t ip, std::uint16_t mtu, std::uint16_t expiry) {
    return (std::uint64_t{ip} << 32) | (std::uint64_t{mtu} << 16) | expiry;
  }
  // Seconds left before the expiry (16-bit clock, wraps): <= 0 once expired.
  std::int32_t left(std::uint64_t w) const {
    return static_cast<std::int16_t>(expiry_of(w) - static_cast<std::uint16_t>(clock_s_.load(std::memory_order_relaxed)));
  }

  // VTEP address (network order; 0 = free) << 32 | MTU << 16 | expiry (clock seconds mod 2^16).
  std::array<std::atomic<std::uint64_t>, kSlots> words_{};
  std::atomic<std::uint32_t> active_{0};   // slots in use: set by learn, recounted by tick
  std::atomic<std::uint32_t> clock_s_{0};  // the control thread's clock, seconds
};

static_assert(PathMtuCache::kSlots == 1u << 10, "home() yields 10 bits");

}  // namespace vxfed::dataplane
