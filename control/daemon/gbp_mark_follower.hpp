// The GBP mark on this node's blocks (docs/bgp.md, "The GBP mark") follows the forwarder
// under vxfedd. Each change goes to bgpd off the io thread (bgp::RouteSource::set_gbp_mark: the
// adapter's apply thread; set in place and sent again in milliseconds, or a whole frr-reload of
// 1-10 s when bgpd runs something else too), its result comes back on the io thread, and this
// class is the one owner of their order: one apply at a time, changes while one runs coalesce
// (when it ends, the last mark wanted is applied if it differs from the one just applied), and a
// failure is logged by the caller and retried after `retry` (or at once when another mark is
// wanted by then). The adapter takes one change at a time and refuses a second while one waits.
// Before, the frr-reload ran inside the io thread's handler and held every vxfedctl request, the
// dataplane link, the metrics page and the BMP/FPM feeds for its length.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/result.hpp"

namespace vxfed::control {

class GbpMarkFollower {
 public:
  static constexpr std::chrono::milliseconds kRetry{5000};
  // Starts FRR's config with `mark` applied; `done` on the io thread with the result (io thread).
  using Apply = std::function<void(bool mark, std::function<void(Status)> done)>;
  // Told on the io thread after each apply (for the log).
  using Applied = std::function<void(bool mark, const Status& result)>;

  struct Stats {
    std::uint64_t applies = 0;    // applies started
    std::uint64_t failures = 0;   // of them, failed (each retried)
    std::uint64_t coalesced = 0;  // marks wanted while an apply ran
  };

  // `applied`: the mark FRR's config holds now (the route source starts without it).
  GbpMarkFollower(boost::asio::io_context& io, bool applied, Apply apply, Applied report,
                  std::chrono::milliseconds retry = kRetry);
  ~GbpMarkFollower();

  void want(bool mark);  // io thread
  bool applying() const { return applying_; }
  std::optional<bool> applied() const { return applied_; }  // nullopt: unknown after a failure
  const Stats& stats() const { return stats_; }

 private:
  void next();

  Apply apply_;
  Applied report_;
  std::chrono::milliseconds retry_;
  boost::asio::steady_timer retry_timer_;
  bool wanted_;
  std::optional<bool> applied_;
  bool applying_ = false;
  bool retry_pending_ = false;
  Stats stats_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace vxfed::control
