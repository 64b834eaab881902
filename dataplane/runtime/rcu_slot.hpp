// One RCU-published object (docs/conventions.md: table publication): the control thread builds a new object,
// swaps the pointer, waits for a grace period (rte_rcu_qsbr: every worker reports a quiescent
// state once per loop iteration, when it holds no pointer into the tables) and frees the old
// one. Workers never lock and see the old object or the new one, never a torn one.
#pragma once

#include <atomic>
#include <memory>

#include <rte_rcu_qsbr.h>

#include "dataplane/core/reclaimer.hpp"

namespace vxfed::dataplane {

template <typename T>
class RcuSlot {
 public:
  explicit RcuSlot(rte_rcu_qsbr* qs) : qs_(qs) {}
  ~RcuSlot() { delete current_.load(std::memory_order_acquire); }
  RcuSlot(const RcuSlot&) = delete;
  RcuSlot& operator=(const RcuSlot&) = delete;

  // Worker side: the object in force, valid until the worker's next quiescent report.
  const T* read() const { return current_.load(std::memory_order_acquire); }

  // Control side: installs `next`, waits until no worker can still hold the old object, and
  // frees it. Returns after the grace period, so callers may then release what only the old
  // object referenced (ports, for instance).
  void publish(std::unique_ptr<const T> next) {
    const T* old = current_.exchange(next.release(), std::memory_order_acq_rel);
    rte_rcu_qsbr_synchronize(qs_, RTE_QSBR_THRID_INVALID);
    delete old;
  }

  // Control side, without waiting: installs `next`; the old object is freed by `reclaimer`
  // after a grace period.
  void publish_deferred(std::unique_ptr<const T> next, Reclaimer& reclaimer) {
    const T* old = current_.exchange(next.release(), std::memory_order_acq_rel);
    if (old) reclaimer.defer([old] { delete old; });
  }

 private:
  rte_rcu_qsbr* qs_;
  std::atomic<const T*> current_{nullptr};
};

}  // namespace vxfed::dataplane
