// A producer on a full ring runs the work (src/device/stream.h): enqueue on a full ring takes
// the run token and runs the tasks up to the one that frees its slot, never more; a waiter that
// leaves work pending does not ring the worker, which takes it after a short grace.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "device/device_api.h"
#include "device/stream.h"
#include "trnccl/trnrt.h"
#include "unit/device/runtime_test_util.h"
#include "unit/device/stream_test_util.h"

namespace {

using stream_test::enqueueRecorder;
using stream_test::Gate;
using stream_test::Seen;
using trnccl::Status;
using trnccl::device::Stream;
using ThreadId = std::thread::id;

// The gate holds the worker until this thread waits on the full ring. From then on, every
// task this thread runs inside enqueue is one its slot needed, and the last it runs is the one
// that frees the slot. Which enqueues run tasks depends on the scheduler (the worker takes
// over when we are away longer than the grace), so those checks are per task and per call;
// that this thread ran some at all is asserted over thousands of calls.
TEST(StreamProducer, ProducerOnAFullRingRunsTasksUpToItsSlot) {
  StreamGuard guard;
  trnrtStream* stream = guard.get();
  constexpr uint64_t kExtra = 3 * Stream::kSlots;
  const ThreadId me = std::this_thread::get_id();
  std::atomic<uint64_t> needed{0};    // completion count the current enqueue waits for
  std::atomic<uint64_t> beyond{0};    // tasks this thread ran that its slot did not need
  std::atomic<uint64_t> lastMine{0};  // index + 1 of the last task this thread ran
  std::atomic<uint64_t> ranByMe{0};
  auto task = [&](uint64_t index) {
    return [&, index] {
      if (std::this_thread::get_id() == me) {
        if (index >= needed.load()) beyond.fetch_add(1);
        lastMine = index + 1;
        ranByMe.fetch_add(1);
      }
      return Status::ok();
    };
  };
  Gate gate(stream, 1);  // task 0
  for (uint64_t i = 1; i < Stream::kSlots; ++i) stream->enqueue(task(i));
  uint64_t shortOfSlot = 0;  // calls that ran tasks but stopped before the freeing one
  for (uint64_t i = Stream::kSlots; i < Stream::kSlots + kExtra; ++i) {
    needed = i - Stream::kSlots + 1;
    const uint64_t ranBefore = ranByMe.load();
    ASSERT_EQ(stream->enqueue(task(i)), i);
    if (ranByMe.load() != ranBefore && lastMine.load() != needed.load()) ++shortOfSlot;
  }
  const uint64_t ranInEnqueue = ranByMe.load();
  needed = UINT64_MAX;  // synchronize runs the rest here
  ASSERT_RT_OK(trnrtStreamSynchronize(stream));
  EXPECT_EQ(beyond.load(), 0u);
  EXPECT_EQ(shortOfSlot, 0u);
  EXPECT_GT(ranInEnqueue, 0u);
}

// Producers fill the ring while a thread synchronizes over and over and the worker runs:
// task k in the order of the returned sequence numbers is the k-th to run, exactly.
TEST(StreamProducer, FifoUnderConcurrentProducersOnAFullRingAWaiterAndTheWorker) {
  StreamGuard guard;
  trnrtStream* stream = guard.get();
  constexpr int kProducers = 3;
  constexpr uint64_t kEach = Stream::kSlots;
  std::vector<uint64_t> order;  // tags in run order; tasks never overlap
  order.reserve(kProducers * kEach);
  std::vector<std::vector<uint64_t>> sequences(kProducers, std::vector<uint64_t>(kEach));
  std::atomic<bool> producing{true};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (uint64_t i = 0; i < kEach; ++i) {
        const uint64_t tag = p * kEach + i;
        sequences[p][i] = stream->enqueue([&order, tag] {
          order.push_back(tag);
          return Status::ok();
        });
      }
    });
  }
  std::thread waiter([&] {
    while (producing.load()) {
      EXPECT_TRUE(stream->synchronize().isOk());
      std::this_thread::yield();
    }
  });
  for (std::thread& t : producers) t.join();
  producing = false;
  waiter.join();
  ASSERT_RT_OK(trnrtStreamSynchronize(stream));
  ASSERT_EQ(order.size(), kProducers * kEach);
  for (int p = 0; p < kProducers; ++p) {
    for (uint64_t i = 0; i < kEach; ++i) EXPECT_EQ(order[sequences[p][i]], p * kEach + i);
  }
}

// A waiter runs up to its task and leaves the rest pending without ringing the worker; the
// parked worker takes it after the grace (100 us), nobody syncing. Were it left to the
// worker's bounded sleep (100 ms) instead, the 20 rounds would take 2 s: 1 s is generous.
TEST(StreamProducer, PendingWorkLeftByAWaiterRunsWithinTheGrace) {
  StreamGuard guard;
  trnrtStream* stream = guard.get();
  constexpr int kRounds = 20;
  std::chrono::steady_clock::duration pending{};
  for (int round = 0; round < kRounds; ++round) {
    Gate gate(stream, 1);
    std::vector<Seen> seen(4);
    enqueueRecorder(stream, &seen[0]);
    const uint64_t mine = stream->enqueue([] { return Status::ok(); });
    for (size_t i = 1; i < seen.size(); ++i) enqueueRecorder(stream, &seen[i]);
    ASSERT_TRUE(stream->waitFor(mine).isOk());
    const auto left = std::chrono::steady_clock::now();
    const auto deadline = left + std::chrono::seconds(30);
    while (trnrtStreamQuery(stream) == trnrtErrorNotReady &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    pending += std::chrono::steady_clock::now() - left;
    ASSERT_EQ(trnrtStreamQuery(stream), trnrtSuccess);
    EXPECT_EQ(seen[0].thread, std::this_thread::get_id());
    for (size_t i = 1; i < seen.size(); ++i) EXPECT_NE(seen[i].thread, std::this_thread::get_id());
  }
  EXPECT_LT(pending, std::chrono::seconds(1));
}

}  // namespace
