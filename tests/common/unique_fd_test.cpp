// UniqueFd closes what it holds exactly once: at destruction, on reset, on move-assignment;
// never after release() or a move out.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <utility>

#include "common/unique_fd.hpp"

namespace {

using vxfed::UniqueFd;

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

int new_fd() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

TEST(UniqueFd, ClosesWhenItGoes) {
  int raw = -1;
  {
    UniqueFd fd(new_fd());
    raw = fd.get();
    ASSERT_TRUE(fd.valid());
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(UniqueFd, AMoveHandsItOverAndTheSourceClosesNothing) {
  UniqueFd a(new_fd());
  const int raw = a.get();
  UniqueFd b(std::move(a));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  EXPECT_EQ(b.get(), raw);
  UniqueFd c;
  c = std::move(b);
  EXPECT_EQ(c.get(), raw);
  EXPECT_TRUE(is_open(raw));
}

TEST(UniqueFd, ResetAndMoveAssignmentCloseTheOldOne) {
  UniqueFd a(new_fd());
  const int first = a.get();
  a.reset(new_fd());  // opened while the first is open: another number
  EXPECT_NE(a.get(), first);
  EXPECT_FALSE(is_open(first)) << "reset did not close the first descriptor";
  const int second = a.get();
  UniqueFd b(new_fd());
  const int third = b.get();
  a = std::move(b);
  EXPECT_EQ(a.get(), third);
  EXPECT_FALSE(is_open(second)) << "move-assignment did not close the descriptor it replaced";
  a.reset();
  EXPECT_FALSE(a.valid());
  EXPECT_FALSE(is_open(third));
}

TEST(UniqueFd, ReleaseGivesItUpOpen) {
  UniqueFd a(new_fd());
  const int raw = a.release();
  EXPECT_FALSE(a.valid());
  EXPECT_TRUE(is_open(raw));
  ::close(raw);
}

}  // namespace
