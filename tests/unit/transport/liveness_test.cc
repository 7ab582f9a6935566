// The liveness rule every network transport shares (transports/core/liveness.h): the heartbeat
// interval of a pair, the timeout from the environment, and the error of a silent link.
#include "transports/core/liveness.h"

#include <gtest/gtest.h>

#include <thread>

#include "support/transport_harness.h"

namespace trnccl::transport {
namespace {

using namespace std::chrono_literals;
using test::EnvGuard;

TEST(Liveness, HeartbeatsComeEightTimesPerSmallerTimeout) {
  EXPECT_EQ(heartbeatInterval(3000ms, 3000ms), 375ms);
  EXPECT_EQ(heartbeatInterval(3000ms, 800ms), 100ms);  // the stricter end sets the pace
  EXPECT_EQ(heartbeatInterval(0ms, 800ms), 100ms);     // an end that checks nothing still sends
  EXPECT_EQ(heartbeatInterval(800ms, 0ms), 100ms);
  EXPECT_EQ(heartbeatInterval(0ms, 0ms), 0ms);            // nobody checks: no heartbeats
  EXPECT_EQ(heartbeatInterval(30000ms, 30000ms), 500ms);  // at least two a second
  EXPECT_EQ(heartbeatInterval(20ms, 20ms), 10ms);         // at least 10 ms apart
}

TEST(Liveness, TimeoutFromTheEnvironment) {
  {
    EnvGuard unset("TRNCCL_LIVENESS_TIMEOUT_MS", "");
    EXPECT_EQ(livenessTimeout(), kDefaultLivenessTimeout);
  }
  {
    EnvGuard set("TRNCCL_LIVENESS_TIMEOUT_MS", "2500");
    EXPECT_EQ(livenessTimeout(), 2500ms);
  }
  {
    EnvGuard off("TRNCCL_LIVENESS_TIMEOUT_MS", "0");
    EXPECT_EQ(livenessTimeout(), 0ms);
  }
  {
    EnvGuard negative("TRNCCL_LIVENESS_TIMEOUT_MS", "-5");
    EXPECT_EQ(livenessTimeout(), kDefaultLivenessTimeout);
  }
}

TEST(Liveness, SilenceLongerThanTheTimeoutIsATimeoutNamingThePeer) {
  LastHeard heard;
  EXPECT_TRUE(checkLiveness(heard, 50ms, "xp", 3, "10.0.0.3:7").isOk());
  std::this_thread::sleep_for(80ms);
  Status status = checkLiveness(heard, 50ms, "xp", 3, "10.0.0.3:7");
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.code(), Code::kTimeout);
  EXPECT_EQ(status.peer(), 3);
  EXPECT_TRUE(status.message().starts_with("xp: heard nothing from rank 3 (10.0.0.3:7) for 0."))
      << status.message();
  EXPECT_NE(status.message().find("(TRNCCL_LIVENESS_TIMEOUT_MS=50)"), std::string::npos);
  EXPECT_TRUE(checkLiveness(heard, 0ms, "xp", 3, "10.0.0.3:7").isOk());  // 0: off
  heard.touch();
  EXPECT_TRUE(checkLiveness(heard, 50ms, "xp", 3, "10.0.0.3:7").isOk());
}

}  // namespace
}  // namespace trnccl::transport
