// How a worker waits when its queues are empty. Reset by any packet:
//   1. spin for a few empty polls (the next burst is often microseconds away under load: no
//      sleep, no latency), yielding the CPU between polls (sched_yield) by default: where the
//      worker shares its CPU with the pods (a Kubernetes node without isolated cores), a pod
//      woken on that CPU runs at once instead of waiting out the spin; on a dedicated core
//      nothing else is runnable and the yield returns at once;
//   then, when every source the worker polls can wake it (socket_wakeup.hpp: af_packet
//   sockets + its WakeEvent), it blocks in the kernel until a packet arrives: no timer, no
//   latency added by a nap, no CPU while idle. Otherwise timed naps:
//   2. short sleeps, 1 us doubling up to `short_sleep_us` (default 20 us), for the first
//      `deep_after_us` of idleness: traffic with small gaps keeps a low latency;
//   3. then deep sleeps of `deep_sleep_us` (default 1 ms): a wake-up costs a few
//      microseconds of kernel time, so an idle forwarder stays at a few percent of a core.
// The worker sets its timer slack small (PR_SET_TIMERSLACK) so that sleeps stay this short.
#pragma once

#include <sched.h>
#include <time.h>

#include <cstdint>

#include <rte_cycles.h>
#include <rte_pause.h>

namespace vxfed::dataplane {

struct IdlePolicy {
  std::uint32_t short_sleep_us = 20;
  std::uint32_t deep_sleep_us = 1000;
  std::uint32_t deep_after_us = 50000;
  bool busy_poll = false;
  bool block = true;          // block on the ports' sockets when all of them have one
  std::uint32_t spin_us = 0;  // keep spinning this long after the last packet (0: spin_polls polls)
  // Empty polls spun before sleeping or blocking. 256 costs ~25 us where a poll is a ring
  // read; where every poll makes a system call (the pod sockets' recvmmsg, ~1-2.5 us on this
  // VM) the runtime asks for fewer, or the spin takes the CPU the pods need (docs/pod-ports.md).
  std::uint32_t spin_polls = 256;
  // Between spin polls: sched_yield() (true) or rte_pause() (false).
  bool spin_yield = true;
};

class IdleBackoff {
 public:
  explicit IdleBackoff(const IdlePolicy& p)
      : short_max_ns_(p.short_sleep_us * 1000ull), deep_ns_(p.deep_sleep_us * 1000ull),
        deep_after_ns_(p.deep_after_us * 1000ull), busy_poll_(p.busy_poll), block_(p.block),
        spin_cycles_(p.spin_us * rte_get_tsc_hz() / 1000000ull), spin_polls_(p.spin_polls),
        spin_yield_(p.spin_yield) {}

  void work_done() {
    empty_polls_ = 0;
    sleep_ns_ = kFirstSleepNs;
    slept_ns_ = 0;
  }

  enum class Step { spun, slept, block };

  // Called after a loop iteration that found nothing. `can_block`: the worker can wait for
  // its sockets (then Step::block tells it to, and it calls woke() afterwards).
  Step idle(bool can_block) {
    if (busy_poll_) return Step::spun;
    if (++empty_polls_ < spin_polls_) {
      if (empty_polls_ == 1 && spin_cycles_ != 0) spin_until_ = rte_rdtsc() + spin_cycles_;
      pause();
      return Step::spun;
    }
    if (spin_cycles_ != 0 && rte_rdtsc() < spin_until_) {
      pause();
      return Step::spun;
    }
    if (can_block && block_) return Step::block;
    const std::uint64_t ns = next_sleep_ns();
    timespec ts{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
    ::nanosleep(&ts, nullptr);
    slept_ns_ += ns;  // requested time: cheap, and close enough to decide the stage
    if (sleep_ns_ < short_max_ns_) sleep_ns_ = sleep_ns_ * 2 > short_max_ns_ ? short_max_ns_ : sleep_ns_ * 2;
    return Step::slept;
  }

  // After a block: spin again first, the packet that woke us may have company.
  void woke() { empty_polls_ = 0; }

  // How long the next timed nap will be: the short stage's current sleep, or the deep sleep
  // once the naps so far add up to deep_after_us.
  std::uint64_t next_sleep_ns() const { return slept_ns_ >= deep_after_ns_ ? deep_ns_ : sleep_ns_; }

  // Longest block: a safety net only, every wake source is an event.
  static constexpr int kBlockTimeoutMs = 100;

 private:
  static constexpr std::uint64_t kFirstSleepNs = 1000;
  void pause() const {
    if (spin_yield_)
      ::sched_yield();
    else
      rte_pause();
  }
  std::uint64_t short_max_ns_, deep_ns_, deep_after_ns_;
  bool busy_poll_;
  bool block_;
  std::uint64_t spin_cycles_;
  std::uint64_t spin_until_ = 0;
  std::uint32_t spin_polls_;
  bool spin_yield_;
  std::uint32_t empty_polls_ = 0;
  std::uint64_t sleep_ns_ = kFirstSleepNs;
  std::uint64_t slept_ns_ = 0;
};

}  // namespace vxfed::dataplane
