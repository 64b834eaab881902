// control/daemon/gbp_mark_follower.hpp: the GBP mark's frr-reload, one at a time and awaited on
// the io thread: marks wanted while one runs coalesce (the last wins), a failure is retried,
// and a result arriving after the follower went is dropped. The apply is a fake that holds each
// `done` until the test completes it, as the adapter's apply thread would post it.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "control/daemon/gbp_mark_follower.hpp"

namespace vxfed::control {
namespace {

using namespace std::chrono_literals;

struct Bed {
  boost::asio::io_context io;
  struct Call {
    bool mark;
    std::function<void(Status)> done;
  };
  std::vector<Call> calls;                 // applies started, in order
  std::vector<std::pair<bool, bool>> reports;  // (mark, ok)
  GbpMarkFollower follower{io, false,
                           [this](bool mark, std::function<void(Status)> done) { calls.push_back({mark, std::move(done)}); },
                           [this](bool mark, const Status& r) { reports.emplace_back(mark, r.ok()); }, 20ms};
  void finish(std::size_t i, bool ok) { calls.at(i).done(ok ? Status{} : Status(make_error("frr-reload failed"))); }
};

TEST(GbpMarkFollower, MarksWantedWhileAnApplyRunsCoalesceAndTheLastWins) {
  Bed bed;
  bed.follower.want(true);
  ASSERT_EQ(bed.calls.size(), 1u);
  EXPECT_TRUE(bed.calls[0].mark);
  EXPECT_TRUE(bed.follower.applying());
  // Three changes while it runs: none starts an apply of its own.
  bed.follower.want(false);
  bed.follower.want(true);
  bed.follower.want(false);
  EXPECT_EQ(bed.calls.size(), 1u);
  EXPECT_EQ(bed.follower.stats().coalesced, 3u);
  // It ends: the last mark wanted (off) differs from the one applied: one more apply, of it.
  bed.finish(0, true);
  ASSERT_EQ(bed.calls.size(), 2u);
  EXPECT_FALSE(bed.calls[1].mark);
  bed.finish(1, true);
  EXPECT_EQ(bed.calls.size(), 2u);
  EXPECT_EQ(bed.follower.applied(), std::optional<bool>(false));
  EXPECT_FALSE(bed.follower.applying());
  EXPECT_EQ(bed.reports, (std::vector<std::pair<bool, bool>>{{true, true}, {false, true}}));
}

TEST(GbpMarkFollower, ChangesThatEndWhereTheApplyWentCostNothingMore) {
  Bed bed;
  bed.follower.want(true);
  bed.follower.want(false);
  bed.follower.want(true);  // back to the mark under way
  bed.finish(0, true);
  EXPECT_EQ(bed.calls.size(), 1u);
  EXPECT_EQ(bed.follower.applied(), std::optional<bool>(true));
  bed.follower.want(true);  // already applied: no frr-reload
  EXPECT_EQ(bed.calls.size(), 1u);
  bed.follower.want(false);  // nor when the source starts without it and it stays off
  EXPECT_EQ(bed.calls.size(), 2u);
}

TEST(GbpMarkFollower, AFailureIsReportedAndRetried) {
  Bed bed;
  bed.follower.want(true);
  bed.finish(0, false);
  EXPECT_EQ(bed.follower.stats().failures, 1u);
  EXPECT_EQ(bed.follower.applied(), std::nullopt);
  EXPECT_EQ(bed.calls.size(), 1u);  // not at once: after the retry delay
  bed.io.run_for(200ms);
  ASSERT_EQ(bed.calls.size(), 2u);
  EXPECT_TRUE(bed.calls[1].mark);
  bed.finish(1, true);
  EXPECT_EQ(bed.follower.applied(), std::optional<bool>(true));
  EXPECT_EQ(bed.reports, (std::vector<std::pair<bool, bool>>{{true, false}, {true, true}}));
}

TEST(GbpMarkFollower, AnotherMarkAfterAFailureGoesAtOnce) {
  Bed bed;
  bed.follower.want(true);
  bed.follower.want(false);  // while it runs
  bed.finish(0, false);
  ASSERT_EQ(bed.calls.size(), 2u);  // no wait: the mark wanted now is another
  EXPECT_FALSE(bed.calls[1].mark);
  bed.finish(1, false);
  bed.follower.want(true);  // a new change during the retry's wait: at once, not after it
  ASSERT_EQ(bed.calls.size(), 3u);
  EXPECT_TRUE(bed.calls[2].mark);
  bed.finish(2, true);
  bed.io.run_for(100ms);  // the cancelled retry starts nothing
  EXPECT_EQ(bed.calls.size(), 3u);
}

TEST(GbpMarkFollower, AResultAfterTheFollowerWentIsDropped) {
  std::function<void(Status)> pending;
  int reports = 0;
  boost::asio::io_context io;
  {
    GbpMarkFollower f(io, false, [&](bool, std::function<void(Status)> done) { pending = std::move(done); },
                      [&](bool, const Status&) { ++reports; });
    f.want(true);
  }
  ASSERT_TRUE(pending);
  pending(Status{});  // as the adapter's post would, after vxfedd's shutdown began
  EXPECT_EQ(reports, 0);
}

}  // namespace
}  // namespace vxfed::control
