// The waiter runs the work (src/device/stream.h): a thread blocked in trnrtStreamSynchronize /
// Stream::waitFor (or trnrtEventSynchronize, up to the record) runs the stream's pending tasks
// itself, in order, while the worker steps aside. Each test first holds the stream's worker in a
// gate task that returns only once the wanted number of waiters is there (Stream::waiters()), so
// which thread runs what is deterministic whatever the machine's load.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "device/device_api.h"
#include "device/stream.h"
#include "trnccl/trnrt.h"
#include "unit/device/runtime_test_util.h"

namespace {

using trnccl::Code;
using trnccl::Status;
using trnccl::device::Stream;
using ThreadId = std::thread::id;

// A task that returns once `waiters` threads wait on the stream (an error after 30 s instead
// of a hang). Tests wait until it started before they synchronize, so that it runs on the
// worker and the worker must then step aside for the waiters.
class Gate {
 public:
  Gate(trnrtStream* stream, uint32_t waiters) {
    EXPECT_TRUE(trnccl::device::enqueue(stream, [this, stream, waiters] {
                  started_ = true;
                  const auto deadline = std::chrono::steady_clock::now() + kLimit;
                  while (stream->waiters() < waiters) {
                    if (std::chrono::steady_clock::now() > deadline) {
                      return Status(Code::kTimeout, "gate: the waiters never came");
                    }
                    std::this_thread::sleep_for(std::chrono::microseconds(100));
                  }
                  return Status::ok();
                }).isOk());
    const auto deadline = std::chrono::steady_clock::now() + kLimit;
    while (!started_ && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    EXPECT_TRUE(started_.load());
  }

 private:
  static constexpr auto kLimit = std::chrono::seconds(30);
  std::atomic<bool> started_{false};
};

// Records the thread, the current stream and the current device a task sees.
struct Seen {
  ThreadId thread;
  Stream* stream = nullptr;
  int device = -1;
};

void enqueueRecorder(trnrtStream* stream, Seen* seen) {
  ASSERT_TRUE(trnccl::device::enqueue(stream, [seen] {
                seen->thread = std::this_thread::get_id();
                seen->stream = Stream::current();
                trnrtGetDevice(&seen->device);
                return Status::ok();
              }).isOk());
}

// A task that blocks the stream until `hold` is counted down.
void enqueueHold(trnrtStream* stream, std::latch& hold) {
  ASSERT_TRUE(trnccl::device::enqueue(stream, [&hold] {
                hold.wait();
                return Status::ok();
              }).isOk());
}

// The tasks after the gate run on the thread that synchronizes, with the stream and its
// device current; the thread's own device and current() (none) are back afterwards.
TEST(StreamWaiter, TasksRunOnTheWaitingThreadAsTheStream) {
  trnrtStream* stream = nullptr;
  {
    DeviceGuard device(1);
    ASSERT_RT_OK(trnrtStreamCreate(&stream));
  }
  int mine = -1;
  ASSERT_RT_OK(trnrtGetDevice(&mine));
  ASSERT_NE(mine, 1);
  Gate gate(stream, 1);
  std::vector<Seen> seen(5);
  for (Seen& s : seen) enqueueRecorder(stream, &s);
  ASSERT_RT_OK(trnrtStreamSynchronize(stream));
  for (const Seen& s : seen) {
    EXPECT_EQ(s.thread, std::this_thread::get_id());
    EXPECT_EQ(s.stream, stream);
    EXPECT_EQ(s.device, 1);
  }
  // The stats say the same: the gate on the worker, then one take-over and 5 tasks here.
  const Stream::Stats stats = stream->stats();
  EXPECT_EQ(stats.tasks, 6u);
  EXPECT_EQ(stats.byWaiters, 5u);
  EXPECT_EQ(stats.takeovers, 1u);
  int after = -1;
  ASSERT_RT_OK(trnrtGetDevice(&after));
  EXPECT_EQ(after, mine);
  EXPECT_EQ(Stream::current(), nullptr);
  ASSERT_RT_OK(trnrtStreamDestroy(stream));
}

// waitFor(k) runs up to task k only; the worker runs the rest (the waiter has left), and the
// destructor drains them.
TEST(StreamWaiter, WaiterRunsUpToItsTaskThenTheWorkerTakesOver) {
  std::vector<Seen> seen(8);
  {
    StreamGuard guard;
    trnrtStream* stream = guard.get();
    Gate gate(stream, 1);
    uint64_t third = 0;
    for (size_t i = 0; i < seen.size(); ++i) {
      if (i == 3) third = stream->enqueue([] { return Status::ok(); });
      enqueueRecorder(stream, &seen[i]);
    }
    ASSERT_TRUE(stream->waitFor(third).isOk());
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(seen[i].thread, std::this_thread::get_id());
  }
  for (size_t i = 3; i < seen.size(); ++i) {
    EXPECT_NE(seen[i].thread, ThreadId());  // drained by the destructor
    EXPECT_NE(seen[i].thread, std::this_thread::get_id());
  }
}

// Producers enqueue while two threads synchronize over and over and the worker runs: tasks
// never overlap, each producer's run in its order, none is lost.
TEST(StreamWaiter, FifoUnderConcurrentEnqueuesTwoWaitersAndTheWorker) {
  StreamGuard guard;
  trnrtStream* stream = guard.get();
  constexpr int kProducers = 2;
  constexpr uint64_t kEach = Stream::kSlots + 300;
  std::vector<uint64_t> next(kProducers, 0);  // written by tasks only
  std::atomic<bool> inside{false};
  std::atomic<uint64_t> overlaps{0};
  std::atomic<uint64_t> misordered{0};
  std::atomic<bool> producing{true};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (uint64_t i = 0; i < kEach; ++i) {
        EXPECT_TRUE(trnccl::device::enqueue(stream, [&, p, i] {
                      if (inside.exchange(true)) overlaps.fetch_add(1);
                      if (next[p] != i) misordered.fetch_add(1);
                      next[p] = i + 1;
                      inside.store(false);
                      return Status::ok();
                    }).isOk());
      }
    });
  }
  std::atomic<uint64_t> failures{0};
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&] {
      while (producing.load()) {
        if (!stream->synchronize().isOk()) failures.fetch_add(1);
        std::this_thread::yield();
      }
    });
  }
  threads[0].join();
  threads[1].join();
  producing = false;
  threads[2].join();
  threads[3].join();
  ASSERT_RT_OK(trnrtStreamSynchronize(stream));
  for (int p = 0; p < kProducers; ++p) EXPECT_EQ(next[p], kEach);
  EXPECT_EQ(overlaps.load(), 0u);
  EXPECT_EQ(misordered.load(), 0u);
  EXPECT_EQ(failures.load(), 0u);
}

// Two threads wait on the same stream: the tasks after the gate run once each, in order, on
// one of them (never on the worker), and both return.
TEST(StreamWaiter, TwoWaitersOnOneStream) {
  StreamGuard guard;
  trnrtStream* stream = guard.get();
  Gate gate(stream, 2);
  std::vector<Seen> seen(6);
  for (Seen& s : seen) enqueueRecorder(stream, &s);
  ThreadId ids[2];
  trnrtError_t results[2] = {trnrtErrorUnknown, trnrtErrorUnknown};
  std::vector<std::thread> waiters;
  for (int w = 0; w < 2; ++w) {
    waiters.emplace_back([&, w] {
      ids[w] = std::this_thread::get_id();
      results[w] = trnrtStreamSynchronize(stream);
    });
  }
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(results[0], trnrtSuccess);
  EXPECT_EQ(results[1], trnrtSuccess);
  for (const Seen& s : seen) EXPECT_TRUE(s.thread == ids[0] || s.thread == ids[1]);
}

// Sticky errors on the waiter: the failing task stops the run, later tasks are skipped in
// order and their onSkip is told why, on the waiting thread; a throwing task fails the same way.
TEST(StreamWaiter, StickyErrorAndOnSkipOnTheWaiter) {
  for (const bool throws : {false, true}) {
    StreamGuard guard;
    trnrtStream* stream = guard.get();
    Gate gate(stream, 1);
    ASSERT_TRUE(trnccl::device::enqueue(stream, [throws]() -> Status {
                  if (throws) throw std::runtime_error("boom");
                  return Status(Code::kInternalError, "task fails");
                }).isOk());
    std::atomic<int> ran{0};
    std::vector<int> skipped;
    std::vector<ThreadId> skippedOn;
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(trnccl::device::enqueue(
                      stream,
                      [&] {
                        ran.fetch_add(1);
                        return Status::ok();
                      },
                      [&, i](const Status& error) {
                        EXPECT_NE(error.message().find(throws ? "boom" : "task fails"),
                                  std::string::npos);
                        skipped.push_back(i);
                        skippedOn.push_back(std::this_thread::get_id());
                      })
                      .isOk());
    }
    EXPECT_EQ(trnrtStreamSynchronize(stream), trnrtErrorLaunchFailure);
    EXPECT_NE(std::string(trnrtGetLastErrorMessage()).find(throws ? "boom" : "task fails"),
              std::string::npos);
    EXPECT_EQ(ran.load(), 0);
    EXPECT_EQ(skipped, (std::vector<int>{0, 1, 2}));
    for (ThreadId id : skippedOn) EXPECT_EQ(id, std::this_thread::get_id());
    EXPECT_EQ(trnrtStreamQuery(stream), trnrtErrorLaunchFailure);
  }
}

// A task run by the waiter waits on an event that another stream's worker records: no
// deadlock, and the task after it sees the other stream's work done.
TEST(StreamWaiter, WaiterTaskWaitsOnAnotherStreamsEvent) {
  StreamGuard a;
  StreamGuard b;
  EventGuard event;
  std::atomic<bool> doneOnB{false};
  ASSERT_TRUE(trnccl::device::enqueue(b.get(), [&] {
                // Finishes only once the host waits on a, so a's waiter really blocks on it.
                const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                while (a.get()->waiters() == 0 && std::chrono::steady_clock::now() < deadline) {
                  std::this_thread::sleep_for(std::chrono::microseconds(100));
                }
                doneOnB = true;
                return Status::ok();
              }).isOk());
  ASSERT_RT_OK(trnrtEventRecord(event.get(), b.get()));
  ASSERT_RT_OK(trnrtStreamWaitEvent(a.get(), event.get(), 0));
  bool sawB = false;
  Seen seen;
  ASSERT_TRUE(trnccl::device::enqueue(a.get(), [&] {
                sawB = doneOnB.load();
                return Status::ok();
              }).isOk());
  enqueueRecorder(a.get(), &seen);
  ASSERT_RT_OK(trnrtStreamSynchronize(a.get()));
  EXPECT_TRUE(sawB);
  EXPECT_EQ(seen.thread, std::this_thread::get_id());
}

// No nesting: a task run by the waiter that synchronizes another stream only waits (that
// stream's task runs on its worker); on its own stream it is refused, as on the worker.
TEST(StreamWaiter, TaskOnTheWaiterDoesNotRunOtherStreams) {
  StreamGuard a;
  StreamGuard b;
  std::latch hold(1);
  enqueueHold(b.get(), hold);
  Seen onB;
  enqueueRecorder(b.get(), &onB);
  Gate gate(a.get(), 1);
  trnrtError_t otherSync = trnrtErrorUnknown;
  trnrtError_t ownSync = trnrtSuccess;
  Seen onA;
  ASSERT_TRUE(trnccl::device::enqueue(a.get(), [&] {
                onA.thread = std::this_thread::get_id();
                hold.count_down();
                otherSync = trnrtStreamSynchronize(b.get());
                ownSync = trnrtStreamSynchronize(a.get());
                return Status::ok();
              }).isOk());
  ASSERT_RT_OK(trnrtStreamSynchronize(a.get()));
  EXPECT_EQ(onA.thread, std::this_thread::get_id());
  EXPECT_EQ(otherSync, trnrtSuccess);
  EXPECT_NE(onB.thread, std::this_thread::get_id());
  EXPECT_EQ(ownSync, trnrtErrorInvalidValue);
}

// trnrtEventSynchronize runs the recording stream's tasks up to the record on the waiting
// thread, as the stream's; the task after the record is left to the worker (drained by the
// destructor).
TEST(StreamWaiter, EventSynchronizeRunsTheTasksUpToTheRecord) {
  std::vector<Seen> seen(3);
  Seen after;
  {
    StreamGuard guard;
    EventGuard event;
    trnrtStream* stream = guard.get();
    Gate gate(stream, 1);
    for (Seen& s : seen) enqueueRecorder(stream, &s);
    ASSERT_RT_OK(trnrtEventRecord(event.get(), stream));
    enqueueRecorder(stream, &after);
    ASSERT_RT_OK(trnrtEventSynchronize(event.get()));
    for (const Seen& s : seen) {
      EXPECT_EQ(s.thread, std::this_thread::get_id());
      EXPECT_EQ(s.stream, stream);
    }
    EXPECT_EQ(Stream::current(), nullptr);
  }
  EXPECT_NE(after.thread, ThreadId());
  EXPECT_NE(after.thread, std::this_thread::get_id());
}

// A task before the record fails on the waiting thread: the event reports the failure.
TEST(StreamWaiter, EventSynchronizeReportsAFailureBeforeTheRecord) {
  StreamGuard guard;
  EventGuard event;
  Gate gate(guard.get(), 1);
  ThreadId failedOn;
  ASSERT_TRUE(trnccl::device::enqueue(guard.get(), [&] {
                failedOn = std::this_thread::get_id();
                return Status(Code::kInternalError, "task fails");
              }).isOk());
  ASSERT_RT_OK(trnrtEventRecord(event.get(), guard.get()));
  EXPECT_EQ(trnrtEventSynchronize(event.get()), trnrtErrorLaunchFailure);
  EXPECT_NE(std::string(trnrtGetLastErrorMessage()).find("task fails"), std::string::npos);
  EXPECT_EQ(failedOn, std::this_thread::get_id());
}

// trnrtStreamQuery never runs tasks: a host that only polls leaves them all to the worker.
TEST(StreamWaiter, QueryRunsNothing) {
  StreamGuard guard;
  std::latch hold(1);
  enqueueHold(guard.get(), hold);
  std::vector<Seen> seen(3);
  for (Seen& s : seen) enqueueRecorder(guard.get(), &s);
  EXPECT_EQ(trnrtStreamQuery(guard.get()), trnrtErrorNotReady);
  hold.count_down();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (trnrtStreamQuery(guard.get()) == trnrtErrorNotReady &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  EXPECT_EQ(trnrtStreamQuery(guard.get()), trnrtSuccess);
  for (const Seen& s : seen) EXPECT_NE(s.thread, std::this_thread::get_id());
  EXPECT_EQ(guard.get()->stats().byWaiters, 0u);
}

}  // namespace
