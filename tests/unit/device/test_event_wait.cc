// Event waits (src/device/event.h): a host thread asleep in trnrtEventSynchronize, past its
// polls, is woken by a record that completes late, and sees that record's outcome.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <utility>

#include "device/device_api.h"
#include "trnccl/trnrt.h"
#include "unit/device/runtime_test_util.h"

namespace {

using trnccl::Status;
using namespace std::chrono_literals;

// Blocks `stream` on `release`, then records `event` behind it; returns a waiter that calls
// trnrtEventSynchronize on another thread and reports its result and whether the blocking task
// had finished when it returned.
std::future<std::pair<trnrtError_t, bool>> waitBehindLatch(trnrtStream_t stream, trnrtEvent_t event,
                                                           std::latch& release,
                                                           std::atomic<bool>& released, bool fail) {
  EXPECT_TRUE(trnccl::device::enqueue(stream, [&release, &released, fail] {
                release.wait();
                released.store(true);
                return fail ? Status(trnccl::Code::kInternalError, "late failure") : Status::ok();
              }).isOk());
  EXPECT_EQ(trnrtEventRecord(event, stream), trnrtSuccess);
  return std::async(std::launch::async, [event, &released] {
    const trnrtError_t e = trnrtEventSynchronize(event);
    return std::pair{e, released.load()};
  });
}

TEST(EventWait, SleepingWaiterIsWokenByALateRecord) {
  StreamGuard stream;
  EventGuard event;
  std::latch release(1);
  std::atomic<bool> released{false};
  auto waiter = waitBehindLatch(stream.get(), event.get(), release, released, false);
  // Long enough for the waiter to pass its polls and sleep on the event's doorbell.
  const bool early = waiter.wait_for(300ms) != std::future_status::timeout;
  EXPECT_EQ(trnrtEventQuery(event.get()), trnrtErrorNotReady);
  release.count_down();  // before any assertion returns: the stream's destructor drains it
  EXPECT_FALSE(early) << "returned before the record";
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready) << "never woken";
  auto [result, sawRelease] = waiter.get();
  EXPECT_EQ(result, trnrtSuccess);
  EXPECT_TRUE(sawRelease);
  EXPECT_EQ(trnrtEventQuery(event.get()), trnrtSuccess);
}

TEST(EventWait, SleepingWaiterSeesALateFailure) {
  StreamGuard stream;
  EventGuard event;
  std::latch release(1);
  std::atomic<bool> released{false};
  auto waiter = waitBehindLatch(stream.get(), event.get(), release, released, true);
  const bool early = waiter.wait_for(300ms) != std::future_status::timeout;
  release.count_down();
  EXPECT_FALSE(early) << "returned before the record";
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready) << "never woken";
  auto [result, sawRelease] = waiter.get();
  EXPECT_EQ(result, trnrtErrorLaunchFailure);
  EXPECT_TRUE(sawRelease);
  EXPECT_EQ(trnrtEventQuery(event.get()), trnrtErrorLaunchFailure);
  EXPECT_EQ(trnrtStreamSynchronize(stream.get()), trnrtErrorLaunchFailure);
}

}  // namespace
