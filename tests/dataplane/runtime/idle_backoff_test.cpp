// IdleBackoff: the stages an idle worker goes through (dataplane/runtime/idle_backoff.hpp).
// The naps taken here are a few microseconds each; nothing is timed, only the steps and the
// planned sleep lengths are checked.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <rte_cycles.h>

#include "dataplane/runtime/idle_backoff.hpp"
#include "tests/dataplane/eal_env.hpp"

namespace vxfed::dataplane {
namespace {

using Step = IdleBackoff::Step;
constexpr int kSpinPolls = 256;  // the spin stage's length (idle_backoff.hpp)

// A policy whose naps stay tiny: short stage 1, 2, 4, 8, 8 us; deep naps of 3 us after 20 us.
IdlePolicy tiny_naps() {
  IdlePolicy p;
  p.short_sleep_us = 8;
  p.deep_after_us = 20;
  p.deep_sleep_us = 3;
  p.block = false;
  return p;
}

// Idles until the spin stage is over; returns how many polls spun.
int spin_out(IdleBackoff& b, bool can_block) {
  int spun = 0;
  while (spun < 10 * kSpinPolls) {
    const Step s = b.idle(can_block);
    if (s != Step::spun) return spun;
    ++spun;
  }
  return spun;
}

TEST(IdleBackoff, SpinsFirstThenNaps) {
  IdleBackoff b(tiny_naps());
  EXPECT_EQ(spin_out(b, false), kSpinPolls - 1);  // the 256th empty poll already naps
}

TEST(IdleBackoff, ShortNapsDoubleUpToTheirMaximumThenDeepNaps) {
  IdleBackoff b(tiny_naps());
  ASSERT_EQ(spin_out(b, false), kSpinPolls - 1);  // that call took the first nap (1 us)
  std::vector<std::uint64_t> planned;
  for (int i = 0; i < 6; ++i) {
    planned.push_back(b.next_sleep_ns());
    ASSERT_EQ(b.idle(false), Step::slept);
  }
  // Slept so far: 1 + 2 + 4 + 8 = 15 us < 20 before the fifth nap, 23 us after it: deep.
  EXPECT_EQ(planned, (std::vector<std::uint64_t>{2000, 4000, 8000, 8000, 3000, 3000}));
}

TEST(IdleBackoff, WorkResetsEverything) {
  IdleBackoff b(tiny_naps());
  spin_out(b, false);
  for (int i = 0; i < 6; ++i) (void)b.idle(false);
  ASSERT_EQ(b.next_sleep_ns(), 3000u);  // deep
  b.work_done();
  EXPECT_EQ(b.next_sleep_ns(), 1000u);
  EXPECT_EQ(spin_out(b, false), kSpinPolls - 1);  // spins the whole stage again
}

TEST(IdleBackoff, BlocksAfterSpinningWhenAllowedAndPossible) {
  IdlePolicy p = tiny_naps();
  p.block = true;
  IdleBackoff b(p);
  int spun = 0;
  Step s;
  while ((s = b.idle(true)) == Step::spun) ++spun;
  EXPECT_EQ(spun, kSpinPolls - 1);
  EXPECT_EQ(s, Step::block);
  EXPECT_EQ(b.idle(true), Step::block);   // still idle: block again, no nap
  EXPECT_EQ(b.idle(false), Step::slept);  // a source that cannot wake it: timed nap
  b.woke();
  EXPECT_EQ(b.idle(true), Step::spun);    // after a wake-up: spin first
}

TEST(IdleBackoff, BlockingDisabledByPolicyNaps) {
  IdleBackoff b(tiny_naps());  // block = false (--idle-wait sleep)
  spin_out(b, true);
  EXPECT_EQ(b.idle(true), Step::slept);
}

TEST(IdleBackoff, BusyPollNeverLeavesTheSpinStage) {
  IdlePolicy p = tiny_naps();
  p.busy_poll = true;
  p.block = true;
  IdleBackoff b(p);
  for (int i = 0; i < 4 * kSpinPolls; ++i) ASSERT_EQ(b.idle(true), Step::spun) << "poll " << i;
}

TEST(IdleBackoff, SpinUsKeepsSpinningUntilTheTimeHasPassed) {
  VXFED_REQUIRE_EAL();  // the spin time is counted in TSC cycles
  ASSERT_GT(rte_get_tsc_hz(), 0u);
  IdlePolicy p = tiny_naps();
  p.spin_us = 2000;  // 2 ms: far more than 256 polls take
  // Pause between polls, not yield: on a loaded machine (CI's parallel tests, a build) each
  // sched_yield can hand the CPU away for a whole time slice, and 2 ms then passed within the
  // 256 polls (seen once: 255 polls in 261 ms) — which says nothing about the spin time.
  p.spin_yield = false;
  IdleBackoff b(p);
  const std::uint64_t start = rte_rdtsc();
  int spun = 0;
  while (b.idle(false) == Step::spun) ++spun;
  const std::uint64_t elapsed = rte_rdtsc() - start;
  EXPECT_GT(spun, kSpinPolls);
  EXPECT_GE(elapsed, 2000 * rte_get_tsc_hz() / 1000000);  // it did not nap before 2 ms
}

// The spin stage yields the CPU (the default): a thread woken on the worker's CPU (a pod's
// process that a packet woke) runs during the spin instead of after it. Both threads pinned
// to one CPU; the woken thread only notes that it ran. With rte_pause the few polls here take
// microseconds and the woken thread mostly waits until the worker blocks (checked by hand: it
// fails).
TEST(IdleBackoff, SpinYieldsTheCpuToAWokenThread) {
  cpu_set_t mine;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine), 0);
  const int cpu = sched_getcpu();
  ASSERT_GE(cpu, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
  const int wake = ::eventfd(0, 0);
  ASSERT_GE(wake, 0);
  std::atomic<bool> stop{false};
  std::atomic<int> runs{0};
  std::thread woken([&] {
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    std::uint64_t v;
    while (::read(wake, &v, sizeof(v)) == sizeof(v) && !stop.load()) runs.fetch_add(1);
  });
  IdlePolicy p = tiny_naps();
  p.spin_polls = 16;  // the pod sockets' spin (dataplane.cpp)
  p.block = true;     // the stage after the spin returns Step::block without sleeping
  ASSERT_TRUE(p.spin_yield);  // the default
  int ran_during_spin = 0;
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // it is asleep in read()
    const int before = runs.load();
    const std::uint64_t one_event = 1;
    ASSERT_EQ(::write(wake, &one_event, sizeof(one_event)), 8);
    IdleBackoff b(p);
    int spun = 0;
    while (b.idle(true) == Step::spun) ++spun;
    EXPECT_EQ(spun, 15);
    if (runs.load() > before) ++ran_during_spin;
  }
  stop = true;
  const std::uint64_t one_event = 1;
  ASSERT_EQ(::write(wake, &one_event, sizeof(one_event)), 8);
  woken.join();
  ::close(wake);
  pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine);
  // Other processes on the CPU (tests run in parallel) may take a yield's turn: most rounds,
  // not all. With rte_pause about 8 of 20 (a wake-up preempting the spinner on its own).
  EXPECT_GE(ran_during_spin, 17) << "a woken thread on the worker's CPU waited for the spin to end";
}

}  // namespace
}  // namespace vxfed::dataplane
