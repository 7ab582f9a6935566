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

// The waiter sleeps (300 ms: well past its polls) until the blocking task finishes with
// success or failure; it must then return `expected`, after the task, within 10 s.
void expectLateRecordWakes(bool fail, trnrtError_t expected) {
  StreamGuard stream;
  EventGuard event;
  std::latch release(1);
  std::atomic<bool> released{false};
  auto waiter = waitBehindLatch(stream.get(), event.get(), release, released, fail);
  const bool early = waiter.wait_for(300ms) != std::future_status::timeout;
  EXPECT_EQ(trnrtEventQuery(event.get()), trnrtErrorNotReady);
  release.count_down();  // before any assertion returns: the stream's destructor drains it
  EXPECT_FALSE(early) << "returned before the record";
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready) << "never woken";
  auto [result, sawRelease] = waiter.get();
  EXPECT_EQ(result, expected);
  EXPECT_TRUE(sawRelease);
  EXPECT_EQ(trnrtEventQuery(event.get()), expected);
  EXPECT_EQ(trnrtStreamSynchronize(stream.get()), expected);
}

TEST(EventWait, SleepingWaiterIsWokenByALateRecord) { expectLateRecordWakes(false, trnrtSuccess); }

TEST(EventWait, SleepingWaiterSeesALateFailure) {
  expectLateRecordWakes(true, trnrtErrorLaunchFailure);
}

}  // namespace
