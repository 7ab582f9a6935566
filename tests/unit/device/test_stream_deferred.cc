// Deferred start (src/device/stream.h): once a host thread waits right after each of its
// enqueues, the stream leaves the tasks to that thread instead of waking its worker for each,
// and every way out of the pattern (a task nobody waits for, an enqueue behind a waiting task,
// query(), another stream or an event waiting for the work) still starts the work.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "device/device_api.h"
#include "device/stream.h"
#include "trnccl/trnrt.h"
#include "unit/device/runtime_test_util.h"

namespace {

using trnccl::Status;
using Clock = std::chrono::steady_clock;

constexpr auto kLimit = std::chrono::seconds(30);

// Enqueues a task that records the thread it ran on.
void enqueueNoting(trnrtStream_t stream, std::atomic<std::thread::id>* ranOn) {
  ASSERT_TRUE(trnccl::device::enqueue(stream, [ranOn] {
                ranOn->store(std::this_thread::get_id());
                return Status::ok();
              }).isOk());
}

// Waits after each of `n` calls of `tasks` enqueues, as a blocking-style caller does; returns
// how many of the calls' tasks all ran on this thread.
int waitAfterEach(trnrtStream_t stream, int n, int tasks = 1) {
  int here = 0;
  for (int i = 0; i < n; ++i) {
    std::vector<std::atomic<std::thread::id>> ranOn(tasks);
    for (auto& r : ranOn) enqueueNoting(stream, &r);
    EXPECT_EQ(trnrtStreamSynchronize(stream), trnrtSuccess);
    here += std::all_of(ranOn.begin(), ranOn.end(),
                        [](const auto& r) { return r.load() == std::this_thread::get_id(); })
                ? 1
                : 0;
  }
  return here;
}

// Polls `done` without touching the stream (a query would start the work itself).
template <typename Done>
bool eventually(Done done) {
  const auto deadline = Clock::now() + kLimit;
  while (!done() && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  return done();
}

// The pattern turns the mode on, and the tasks then run on the waiting thread: without it the
// idle worker, woken by each enqueue or still polling, took most of them (the caller slept
// until it was done).
TEST(StreamDeferredStart, AWaitAfterEveryEnqueueLeavesTheTasksToTheCaller) {
  StreamGuard guard;
  waitAfterEach(guard.get(), 16);
  EXPECT_GE(guard.get()->stats().deferrals, 1u);
  // A caller preempted for a whole worker sleep between its enqueue and its wait may lose a
  // task to the worker (and the mode until 8 more waits): allow some, not half.
  const int here = waitAfterEach(guard.get(), 400);
  EXPECT_GE(here, 300) << "tasks run by the waiting thread, of 400";
}

// A call of three tasks (torch: the collective, its callback, the event wait() synchronizes)
// is still one wait's worth: the mode holds, and the calls run on the waiting thread.
TEST(StreamDeferredStart, CallsOfThreeTasksStayWithTheCaller) {
  StreamGuard guard;
  waitAfterEach(guard.get(), 16, 3);
  EXPECT_TRUE(guard.get()->defersStart());
  const int here = waitAfterEach(guard.get(), 200, 3);
  EXPECT_GE(here, 150) << "calls run wholly by the waiting thread, of 200";
  // Ending at each call's second enqueue, the mode began again every 8 calls (25 times here);
  // a caller preempted between its enqueues and its wait may lose it once or twice.
  EXPECT_LE(guard.get()->stats().deferrals, 5u);
}

// One thread issuing on two streams, then waiting for each, is not the pattern: the first
// stream's task, run by the waiter, may need the second's (a collective across devices driven
// by one thread), so both keep waking their workers.
TEST(StreamDeferredStart, AThreadIssuingOnTwoStreamsKeepsTheirWorkers) {
  StreamGuard a, b;
  for (int i = 0; i < 50; ++i) {
    std::atomic<std::thread::id> onA, onB;
    enqueueNoting(a.get(), &onA);
    enqueueNoting(b.get(), &onB);
    ASSERT_EQ(trnrtStreamSynchronize(a.get()), trnrtSuccess);
    ASSERT_EQ(trnrtStreamSynchronize(b.get()), trnrtSuccess);
  }
  EXPECT_EQ(a.get()->stats().deferrals, 0u);
  EXPECT_EQ(b.get()->stats().deferrals, 0u);
}

// A caller that stops waiting: its task still starts, by the worker, within its bounded
// sleeps, and the mode ends.
TEST(StreamDeferredStart, ATaskNobodyWaitsForStillStarts) {
  StreamGuard guard;
  waitAfterEach(guard.get(), 16);
  ASSERT_TRUE(guard.get()->defersStart());
  std::atomic<std::thread::id> ranOn;
  enqueueNoting(guard.get(), &ranOn);
  ASSERT_TRUE(eventually([&] { return ranOn.load() != std::thread::id(); }));
  EXPECT_NE(ranOn.load(), std::this_thread::get_id());
  EXPECT_FALSE(guard.get()->defersStart());
  EXPECT_EQ(trnrtStreamSynchronize(guard.get()), trnrtSuccess);
}

// An enqueue that finds four earlier tasks not started yet ends the mode and wakes the worker:
// the caller is issuing work without waiting for each call.
TEST(StreamDeferredStart, AnEnqueueBehindFourWaitingTasksEndsTheMode) {
  StreamGuard guard;
  waitAfterEach(guard.get(), 16);
  ASSERT_TRUE(guard.get()->defersStart());
  std::vector<std::atomic<std::thread::id>> ranOn(5);
  for (int i = 0; i < 4; ++i) enqueueNoting(guard.get(), &ranOn[i]);
  EXPECT_TRUE(guard.get()->defersStart());
  enqueueNoting(guard.get(), &ranOn[4]);
  EXPECT_FALSE(guard.get()->defersStart());
  ASSERT_TRUE(eventually([&] { return ranOn[4].load() != std::thread::id(); }));
  for (const auto& r : ranOn) EXPECT_NE(r.load(), std::thread::id());
  EXPECT_EQ(trnrtStreamSynchronize(guard.get()), trnrtSuccess);
}

// A caller that polls trnrtStreamQuery instead of synchronizing gets its task started.
TEST(StreamDeferredStart, QueryStartsADeferredTask) {
  StreamGuard guard;
  waitAfterEach(guard.get(), 16);
  ASSERT_TRUE(guard.get()->defersStart());
  std::atomic<std::thread::id> ranOn;
  enqueueNoting(guard.get(), &ranOn);
  (void)trnrtStreamQuery(guard.get());
  EXPECT_FALSE(guard.get()->defersStart());
  ASSERT_TRUE(eventually([&] { return trnrtStreamQuery(guard.get()) == trnrtSuccess; }));
  EXPECT_NE(ranOn.load(), std::this_thread::get_id());
}

// Another stream waiting for an event recorded after a deferred task starts that stream's
// work (the event's waiter kicks the stream that recorded it; the worker's bounded sleeps
// would too, later).
TEST(StreamDeferredStart, AnotherStreamWaitingForTheEventStartsTheWork) {
  StreamGuard a, b;
  EventGuard event;
  waitAfterEach(a.get(), 16);
  ASSERT_TRUE(a.get()->defersStart());
  std::atomic<std::thread::id> ranOn;
  enqueueNoting(a.get(), &ranOn);
  ASSERT_RT_OK(trnrtEventRecord(event.get(), a.get()));
  ASSERT_RT_OK(trnrtStreamWaitEvent(b.get(), event.get(), 0));
  std::atomic<bool> after{false};
  ASSERT_TRUE(trnccl::device::enqueue(b.get(), [&] {
                after = ranOn.load() != std::thread::id();
                return Status::ok();
              }).isOk());
  ASSERT_RT_OK(trnrtStreamSynchronize(b.get()));
  EXPECT_TRUE(after.load());
  EXPECT_FALSE(a.get()->defersStart());
  EXPECT_EQ(trnrtStreamSynchronize(a.get()), trnrtSuccess);
}

// A blocking loop that ends: the worker's wake-ups without a wait end the mode, so later
// enqueues wake the worker again at once.
TEST(StreamDeferredStart, TheModeEndsWhenTheWaitsStop) {
  StreamGuard guard;
  waitAfterEach(guard.get(), 16);
  ASSERT_TRUE(guard.get()->defersStart());
  ASSERT_TRUE(eventually([&] { return !guard.get()->defersStart(); }));
}

}  // namespace
