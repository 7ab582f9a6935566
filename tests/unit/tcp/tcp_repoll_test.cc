// When the executor reads an empty socket again (transports/tcp/repoll.h): soon after the
// first empty read (a small message usually lands within a microsecond or two), then less and
// less often, never more often than the short first wait and never later than the old fixed
// 8 µs cadence; bytes or a poll(2) wake-up start over. Pure arithmetic on time points: no
// sockets, no timing.
#include <gtest/gtest.h>

#include "transports/tcp/repoll.h"

namespace trnccl::transport::tcp {
namespace {

using namespace std::chrono_literals;

TEST(TcpRepoll, FirstReadGoesAtOnce) {
  Repoll r;
  EXPECT_TRUE(r.due(Clock::now()));
}

TEST(TcpRepoll, AfterOneEmptyReadTheNextGoesAfterAMicrosecond) {
  Repoll r;
  const Clock::time_point t0 = Clock::now();
  r.empty(t0);
  EXPECT_FALSE(r.due(t0));
  EXPECT_FALSE(r.due(t0 + 999ns));
  // The fixed cadence this replaced waited 8 µs here.
  EXPECT_TRUE(r.due(t0 + 1us));
}

TEST(TcpRepoll, EmptyReadsDoubleTheWaitUpToEightMicroseconds) {
  Repoll r;
  Clock::time_point t = Clock::now();
  const std::chrono::nanoseconds expected[] = {1us, 2us, 4us, 8us, 8us, 8us};
  for (std::chrono::nanoseconds wait : expected) {
    r.empty(t);
    EXPECT_FALSE(r.due(t + wait - 1ns)) << wait.count();
    EXPECT_TRUE(r.due(t + wait)) << wait.count();
    t += wait;
  }
}

TEST(TcpRepoll, ResetStartsOver) {
  Repoll r;
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 5; ++i) r.empty(t0);
  EXPECT_EQ(r.wait(), Repoll::kMax);
  r.reset();  // bytes arrived, or poll(2) saw the socket readable
  EXPECT_TRUE(r.due(t0));
  EXPECT_EQ(r.wait(), Repoll::kFirst);
  r.empty(t0);
  EXPECT_TRUE(r.due(t0 + Repoll::kFirst));
}

}  // namespace
}  // namespace trnccl::transport::tcp
