// ServingLock: the first process on a socket serves at once; a second stands by until the
// first lets go (or is told to stop). flock(2) locks belong to an open file, so two locks in
// one test process contend as two processes would.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "common/serving_lock.hpp"

namespace {

using vxfed::ServingLock;

class ServingLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vxfed-serving-lock-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/sub/api.sock";  // the directory is created by acquire
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_, socket_;
};

TEST_F(ServingLockTest, TheFirstServesAtOnceWithoutWaiting) {
  int waits = 0;
  auto lock = ServingLock::acquire(socket_, [] { return false; }, [&] { ++waits; });
  ASSERT_TRUE(lock) << lock.error();
  EXPECT_TRUE(lock->held());
  EXPECT_EQ(waits, 0);
  EXPECT_TRUE(std::filesystem::exists(ServingLock::path_for(socket_)));
}

TEST_F(ServingLockTest, ASecondStandsByUntilTheFirstReleases) {
  auto first = ServingLock::acquire(socket_, nullptr, nullptr);
  ASSERT_TRUE(first && first->held());
  std::atomic<int> waits{0};
  auto second = std::async(std::launch::async, [&] {
    return ServingLock::acquire(socket_, [] { return false; }, [&] { ++waits; });
  });
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout) << "took a held lock";
  EXPECT_EQ(waits.load(), 1);
  const auto released = std::chrono::steady_clock::now();
  first->release();
  EXPECT_FALSE(first->held());
  auto got = second.get();
  ASSERT_TRUE(got) << got.error();
  EXPECT_TRUE(got->held());
  EXPECT_LT(std::chrono::steady_clock::now() - released, std::chrono::milliseconds(ServingLock::kPollMs * 20));
  EXPECT_EQ(waits.load(), 1) << "on_wait runs once";
}

TEST_F(ServingLockTest, AStopWhileStandingByReturnsALockNotHeld) {
  auto first = ServingLock::acquire(socket_, nullptr, nullptr);
  ASSERT_TRUE(first && first->held());
  std::atomic<bool> stop{false};
  auto second = std::async(std::launch::async, [&] {
    return ServingLock::acquire(socket_, [&] { return stop.load(); }, nullptr);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop = true;
  auto got = second.get();
  ASSERT_TRUE(got) << got.error();
  EXPECT_FALSE(got->held());
  EXPECT_TRUE(first->held());
}

TEST_F(ServingLockTest, MovingKeepsTheLockAndDestroyingReleasesIt) {
  {
    auto lock = ServingLock::acquire(socket_, nullptr, nullptr);
    ASSERT_TRUE(lock);
    ServingLock moved = std::move(*lock);
    EXPECT_TRUE(moved.held());
    EXPECT_FALSE(lock->held());
    bool waited = false;
    auto blocked = ServingLock::acquire(socket_, [] { return true; }, [&] { waited = true; });
    ASSERT_TRUE(blocked);
    EXPECT_FALSE(blocked->held());
    EXPECT_TRUE(waited);
  }
  auto again = ServingLock::acquire(socket_, [] { return true; }, nullptr);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->held()) << "the destroyed lock was not released";
}

TEST_F(ServingLockTest, AnUnwritableLockFileIsAClearError) {
  auto lock = ServingLock::acquire("/proc/vxfed-no-such-dir/api.sock", nullptr, nullptr);
  ASSERT_FALSE(lock);
  EXPECT_NE(lock.error().find("/proc/vxfed-no-such-dir/api.sock.lock"), std::string::npos) << lock.error();
}

}  // namespace
