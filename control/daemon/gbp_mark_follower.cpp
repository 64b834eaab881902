#include "control/daemon/gbp_mark_follower.hpp"

namespace vxfed::control {

GbpMarkFollower::GbpMarkFollower(boost::asio::io_context& io, bool applied, Apply apply, Applied report,
                                 std::chrono::milliseconds retry)
    : apply_(std::move(apply)),
      report_(std::move(report)),
      retry_(retry),
      retry_timer_(io),
      wanted_(applied),
      applied_(applied) {}

GbpMarkFollower::~GbpMarkFollower() {
  *alive_ = false;  // an apply's result arriving after this is dropped
  retry_timer_.cancel();
}

void GbpMarkFollower::want(bool mark) {
  wanted_ = mark;
  if (applying_) {
    ++stats_.coalesced;  // the apply under way has an older mark: next() looks again when it ends
    return;
  }
  if (retry_pending_) {  // a new mark after a failure: no reason to wait for the retry
    retry_pending_ = false;
    retry_timer_.cancel();
  }
  next();
}

void GbpMarkFollower::next() {
  if (applying_ || retry_pending_ || applied_ == wanted_) return;
  applying_ = true;
  ++stats_.applies;
  const bool mark = wanted_;
  auto alive = alive_;
  apply_(mark, [this, alive, mark](Status result) {
    if (!*alive) return;
    applying_ = false;
    if (report_) report_(mark, result);
    if (result) {
      applied_ = mark;
      next();  // the last mark wanted meanwhile, if another
      return;
    }
    ++stats_.failures;
    applied_.reset();  // the adapter keeps the mark for its next apply; FRR's state is not known
    if (wanted_ != mark) {
      next();  // another mark is wanted already: that one now
      return;
    }
    retry_pending_ = true;
    retry_timer_.expires_after(retry_);
    retry_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
      if (ec || !*alive) return;
      retry_pending_ = false;
      next();
    });
  });
}

}  // namespace vxfed::control
