// What in-place table updates need from RCU (docs/conventions.md: table publication). The
// control thread unlinks an entry from the tables (one atomic store), then hands what a worker
// may still be reading to defer(); it is freed once every worker has passed a quiescent point.
// synchronize() waits for such a grace period. The runtime implements it with rte_rcu_qsbr
// (dataplane/runtime/rcu_reclaimer.hpp); tables nobody reads yet use ImmediateReclaimer.
#pragma once

#include <functional>

namespace vxfed::dataplane {

class Reclaimer {
 public:
  virtual ~Reclaimer() = default;
  // Runs `free` after a grace period that starts now; callbacks run in the order deferred.
  virtual void defer(std::function<void()> free) = 0;
  // Returns once every reader has passed a quiescent point since the call, having run the
  // callbacks deferred before it.
  virtual void synchronize() = 0;
};

// No concurrent readers (tables not published yet, single-threaded tests): frees at once.
class ImmediateReclaimer final : public Reclaimer {
 public:
  void defer(std::function<void()> free) override { free(); }
  void synchronize() override {}
};

}  // namespace vxfed::dataplane
