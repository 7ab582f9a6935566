// The data sockets' congestion control (setup.h, congestionControl): pairs on this host take
// reno unless TRNCCL_SOCKET_CONGESTION says otherwise (transports/tcp/README.md, "Congestion
// control over loopback"), pairs on other hosts keep the system's.
#include <gtest/gtest.h>

#include <cstdlib>

#include "transports/tcp/setup.h"
#include "transports/tcp/testing.h"
#include "unit/tcp/tcp_test_util.h"

namespace trnccl::transport::tcp::test {
namespace {

using tcp::testing::Event;

TEST(TcpCongestion, SameHostTakesRenoByDefault) {
  EXPECT_EQ(congestionControl(nullptr, true), "reno");
  EXPECT_EQ(congestionControl(nullptr, false), "");
}

TEST(TcpCongestion, SettingAppliesToEveryPair) {
  EXPECT_EQ(congestionControl("cubic", true), "cubic");
  EXPECT_EQ(congestionControl("cubic", false), "cubic");
  EXPECT_EQ(congestionControl("default", true), "");
  EXPECT_EQ(congestionControl("", true), "");
}

// Connects a 2-rank cluster; how many data sockets were given a congestion control, or -1 when
// the cluster did not connect.
int64_t socketsSetWhenConnecting() {
  CounterDelta<Event> delta;
  Cluster cluster(2);
  if (!cluster.connectAll().isOk()) return -1;
  return delta.get(Event::kCongestionSet);
}

// Over loopback every data socket of both ends is set (reno is always allowed), the control
// socket is not.
TEST(TcpCongestion, LoopbackDataSocketsAreSet) {
  if (std::getenv("TRNCCL_SOCKET_CONGESTION") != nullptr) {
    GTEST_SKIP() << "TRNCCL_SOCKET_CONGESTION is set";
  }
  EnvGuard sockets("TRNCCL_SOCKET_NSOCKS", "2");
  EXPECT_EQ(socketsSetWhenConnecting(), 2 * 2);
}

TEST(TcpCongestion, DefaultLeavesTheSystems) {
  EnvGuard env("TRNCCL_SOCKET_CONGESTION", "default");
  EXPECT_EQ(socketsSetWhenConnecting(), 0);
}

// A name the kernel does not know connects all the same, on the system's congestion control.
TEST(TcpCongestion, UnknownNameKeepsTheSystems) {
  EnvGuard env("TRNCCL_SOCKET_CONGESTION", "no-such-cc");
  EXPECT_EQ(socketsSetWhenConnecting(), 0);
}

}  // namespace
}  // namespace trnccl::transport::tcp::test
