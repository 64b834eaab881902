// How a worker waits when its queues are empty: spin with rte_pause for a while (a new burst
// is often microseconds away under load), then sleep 1 us, doubling up to a ceiling. Any
// packet resets it, so a loaded worker polls and an idle one costs a few percent of a core.
// The thread's timer slack is set small (PR_SET_TIMERSLACK) so a 20 us sleep stays short.
#pragma once

#include <time.h>

#include <cstdint>

#include <rte_pause.h>

namespace vxfed::dataplane {

class IdleBackoff {
 public:
  IdleBackoff(std::uint32_t max_sleep_us, bool busy_poll)
      : max_sleep_ns_(max_sleep_us * 1000u), busy_poll_(busy_poll) {}

  void work_done() {
    empty_polls_ = 0;
    sleep_ns_ = kFirstSleepNs;
  }

  // Called after a loop iteration that found nothing. Returns true when it slept.
  bool idle() {
    if (busy_poll_) return false;
    if (++empty_polls_ < kSpinPolls) {
      rte_pause();
      return false;
    }
    timespec ts{0, static_cast<long>(sleep_ns_)};
    ::nanosleep(&ts, nullptr);
    if (sleep_ns_ < max_sleep_ns_) sleep_ns_ = sleep_ns_ * 2 > max_sleep_ns_ ? max_sleep_ns_ : sleep_ns_ * 2;
    return true;
  }

 private:
  static constexpr std::uint32_t kSpinPolls = 256;
  static constexpr std::uint32_t kFirstSleepNs = 1000;
  std::uint32_t max_sleep_ns_;
  bool busy_poll_;
  std::uint32_t empty_polls_ = 0;
  std::uint32_t sleep_ns_ = kFirstSleepNs;
};

}  // namespace vxfed::dataplane
