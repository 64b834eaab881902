// The tables' Reclaimer on the workers' rte_rcu_qsbr (dataplane/core/reclaimer.hpp): what the
// control thread unlinks is freed once every worker has reported a quiescent state after it
// (each worker reports once per loop iteration, after flushing its TX stage; a worker blocked
// in poll() is offline and holds nothing up). Frees never block the control thread: each
// deferred callback carries a QSBR token, poll() runs those whose grace period has ended.
// Control thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <utility>

#include <rte_rcu_qsbr.h>

#include "dataplane/core/reclaimer.hpp"

namespace vxfed::dataplane {

class RcuReclaimer final : public Reclaimer {
 public:
  explicit RcuReclaimer(rte_rcu_qsbr* qs) : qs_(qs) {}
  ~RcuReclaimer() override { run_all(); }

  void defer(std::function<void()> free) override {
    queue_.emplace_back(rte_rcu_qsbr_start(qs_), std::move(free));
  }
  // Waits for a grace period covering everything deferred so far, then runs it all.
  void synchronize() override {
    if (!queue_.empty()) rte_rcu_qsbr_check(qs_, queue_.back().first, true);
    run_all();
    ++synchronizations_;
  }
  // Runs what is due, without waiting. Returns how many callbacks ran.
  std::size_t poll() {
    std::size_t ran = 0;
    while (!queue_.empty() && rte_rcu_qsbr_check(qs_, queue_.front().first, false) == 1) {
      auto f = std::move(queue_.front().second);
      queue_.pop_front();
      f();
      ++ran;
    }
    reclaimed_ += ran;
    return ran;
  }
  // With no reader left (workers stopped): runs everything.
  void run_all() {
    while (!queue_.empty()) {
      auto f = std::move(queue_.front().second);
      queue_.pop_front();
      f();
      ++reclaimed_;
    }
  }
  std::size_t pending() const { return queue_.size(); }
  std::uint64_t reclaimed() const { return reclaimed_; }
  std::uint64_t synchronizations() const { return synchronizations_; }

 private:
  rte_rcu_qsbr* qs_;
  std::deque<std::pair<std::uint64_t, std::function<void()>>> queue_;
  std::uint64_t reclaimed_ = 0, synchronizations_ = 0;
};

}  // namespace vxfed::dataplane
