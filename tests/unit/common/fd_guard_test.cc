// FdGuard (src/common/fd_guard.h): the fd it holds is closed exactly once, by whoever holds it
// last, unless released.
#include "common/fd_guard.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace trnccl {
namespace {

bool isOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

int openNull() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

TEST(FdGuard, ClosesOnScopeExit) {
  int fd = openNull();
  ASSERT_GE(fd, 0);
  {
    FdGuard guard(fd);
    EXPECT_TRUE(guard);
    EXPECT_EQ(guard.get(), fd);
  }
  EXPECT_FALSE(isOpen(fd));
}

TEST(FdGuard, ReleaseHandsTheFdOver) {
  int fd = openNull();
  {
    FdGuard guard(fd);
    EXPECT_EQ(guard.release(), fd);
    EXPECT_FALSE(guard);
  }
  EXPECT_TRUE(isOpen(fd));
  ::close(fd);
}

TEST(FdGuard, MovesOwnershipAndResetClosesTheOld) {
  int first = openNull();
  int second = openNull();
  FdGuard a(first);
  FdGuard b(std::move(a));
  EXPECT_FALSE(a);  // NOLINT: moved-from is empty by contract
  EXPECT_EQ(b.get(), first);
  b.reset(second);
  EXPECT_FALSE(isOpen(first));
  EXPECT_TRUE(isOpen(second));
  FdGuard c;
  c = std::move(b);
  EXPECT_EQ(c.get(), second);
  c.reset();
  EXPECT_FALSE(isOpen(second));
}

TEST(FdGuard, EmptyGuardClosesNothing) {
  FdGuard guard(-1);
  EXPECT_FALSE(guard);
  guard.reset();
  EXPECT_EQ(guard.get(), -1);
}

}  // namespace
}  // namespace trnccl
