// Streams and events: asynchrony, ordering, cross-stream dependencies, sticky errors.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "device/device_api.h"
#include "trnccl/trnrt.h"
#include "unit/device/runtime_test_util.h"

namespace {

using trnccl::Status;
using namespace std::chrono_literals;

TEST(Streams, EnqueueReturnsBeforeTheWorkRuns) {
  StreamGuard stream;
  std::latch release(1);
  std::atomic<bool> ran{false};
  ASSERT_TRUE(trnccl::device::enqueue(stream.get(), [&] {
                release.wait();
                ran = true;
                return Status::ok();
              }).isOk());
  EXPECT_FALSE(ran.load());  // enqueue came back while the task is still blocked
  EXPECT_EQ(trnrtStreamQuery(stream.get()), trnrtErrorNotReady);
  release.count_down();
  ASSERT_RT_OK(trnrtStreamSynchronize(stream.get()));
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(trnrtStreamQuery(stream.get()), trnrtSuccess);
}

TEST(Streams, TasksRunInFifoOrder) {
  StreamGuard stream;
  std::vector<int> order;  // touched only by the stream's worker until synchronize
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(trnccl::device::enqueue(stream.get(), [&order, i] {
                  if (i % 10 == 0) std::this_thread::sleep_for(1ms);  // give reordering a chance
                  order.push_back(i);
                  return Status::ok();
                }).isOk());
  }
  ASSERT_RT_OK(trnrtStreamSynchronize(stream.get()));
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(Streams, NullStreamIsTheCurrentDevicesDefaultStream) {
  DeviceGuard guard(2);
  void* dev = nullptr;
  ASSERT_RT_OK(trnrtMalloc(&dev, sizeof(int)));
  ASSERT_RT_OK(trnrtMemset(dev, 0, sizeof(int)));
  // A slow write on the default stream; the synchronous memcpy must be ordered after it.
  ASSERT_TRUE(trnccl::device::enqueue(nullptr, [dev] {
                std::this_thread::sleep_for(30ms);
                *static_cast<int*>(dev) = 42;
                return Status::ok();
              }).isOk());
  int out = 0;
  ASSERT_RT_OK(trnrtMemcpy(&out, dev, sizeof(int), trnrtMemcpyDeviceToHost));
  EXPECT_EQ(out, 42);
  ASSERT_RT_OK(trnrtFree(dev));
}

TEST(Streams, TasksRunOnTheStreamsDevice) {
  trnrtStream_t stream = nullptr;
  {
    DeviceGuard guard(4);
    ASSERT_RT_OK(trnrtStreamCreate(&stream));
  }
  std::atomic<int> seen{-1};
  ASSERT_TRUE(trnccl::device::enqueue(stream, [&] {
                trnrtSetDevice(7);  // must not leak into the next task
                return Status::ok();
              }).isOk());
  ASSERT_TRUE(trnccl::device::enqueue(stream, [&] {
                int device = -1;
                trnrtGetDevice(&device);
                seen = device;
                return Status::ok();
              }).isOk());
  ASSERT_RT_OK(trnrtStreamSynchronize(stream));
  EXPECT_EQ(seen.load(), 4);
  ASSERT_RT_OK(trnrtStreamDestroy(stream));
}

TEST(Streams, MemcpyInsideADefaultStreamTaskDoesNotDeadlock) {
  int src = 7;
  std::atomic<int> dst{0};
  std::atomic<int> result{-1};
  ASSERT_TRUE(trnccl::device::enqueue(nullptr, [&] {
                int local = 0;
                result = trnrtMemcpy(&local, &src, sizeof(int), trnrtMemcpyHostToHost);
                dst = local;
                return Status::ok();
              }).isOk());
  ASSERT_RT_OK(trnrtStreamSynchronize(nullptr));
  EXPECT_EQ(result.load(), trnrtSuccess);
  EXPECT_EQ(dst.load(), 7);
}

TEST(Streams, FailedTaskIsStickyAndSkipsLaterTasks) {
  StreamGuard stream;
  std::atomic<bool> laterRan{false};
  ASSERT_TRUE(trnccl::device::enqueue(stream.get(), [] {
                return trnccl::internalError("boom on purpose {}", 42);
              }).isOk());
  ASSERT_TRUE(trnccl::device::enqueue(stream.get(), [&] {
                laterRan = true;
                return Status::ok();
              }).isOk());
  EXPECT_EQ(trnrtStreamSynchronize(stream.get()), trnrtErrorLaunchFailure);
  EXPECT_EQ(std::string(trnrtGetLastErrorMessage()), "boom on purpose 42");
  EXPECT_FALSE(laterRan.load());
  EXPECT_EQ(trnrtStreamQuery(stream.get()), trnrtErrorLaunchFailure);
  // Still in error for work enqueued afterwards; an event recorded there fails, not hangs.
  EventGuard event;
  ASSERT_RT_OK(trnrtEventRecord(event.get(), stream.get()));
  EXPECT_EQ(trnrtEventSynchronize(event.get()), trnrtErrorLaunchFailure);
  EXPECT_EQ(trnrtStreamSynchronize(stream.get()), trnrtErrorLaunchFailure);
  EXPECT_FALSE(laterRan.load());
}

TEST(Streams, ThrowingTaskFailsTheStream) {
  StreamGuard stream;
  ASSERT_TRUE(trnccl::device::enqueue(stream.get(), []() -> Status {
                throw std::runtime_error("thrown");
              }).isOk());
  EXPECT_EQ(trnrtStreamSynchronize(stream.get()), trnrtErrorLaunchFailure);
  EXPECT_NE(std::string(trnrtGetLastErrorMessage()).find("thrown"), std::string::npos);
}

TEST(Streams, DestroyDrainsPendingWork) {
  std::atomic<int> ran{0};
  trnrtStream_t stream = nullptr;
  ASSERT_RT_OK(trnrtStreamCreate(&stream));
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(trnccl::device::enqueue(stream, [&] {
                  std::this_thread::sleep_for(1ms);
                  ++ran;
                  return Status::ok();
                }).isOk());
  }
  ASSERT_RT_OK(trnrtStreamDestroy(stream));
  EXPECT_EQ(ran.load(), 20);
  EXPECT_EQ(trnrtStreamDestroy(nullptr), trnrtErrorInvalidResourceHandle);
}

// What a host callback saw: set on the stream's worker, read after synchronize.
struct CallbackRecord {
  explicit CallbackRecord(std::vector<int>* o = nullptr, int i = 0) : order(o), id(i) {}
  std::vector<int>* order;
  int id;
  trnrtStream_t stream = nullptr;
  trnrtError_t status = trnrtErrorUnknown;
  std::string message;
};

void recordCallback(trnrtStream_t stream, trnrtError_t status, void* userData) {
  auto* record = static_cast<CallbackRecord*>(userData);
  record->stream = stream;
  record->status = status;
  record->message = trnrtGetLastErrorMessage();
  record->order->push_back(record->id);
}

// The callback runs on whichever thread runs the stream's tasks (the worker, or the host
// waiting in synchronize: test_stream_waiter.cc), in order with them.
TEST(StreamCallbacks, RunInOrderWithTasks) {
  StreamGuard stream;
  std::vector<int> order;
  CallbackRecord record(&order, 2);
  std::latch release(1);
  ASSERT_TRUE(trnccl::device::enqueue(stream.get(), [&] {
                release.wait();
                order.push_back(1);
                return Status::ok();
              }).isOk());
  ASSERT_RT_OK(trnrtStreamAddCallback(stream.get(), recordCallback, &record, 0));
  ASSERT_TRUE(trnccl::device::enqueue(stream.get(), [&] {
                order.push_back(3);
                return Status::ok();
              }).isOk());
  EXPECT_TRUE(order.empty());  // the callback waits for the blocked task before it
  release.count_down();
  ASSERT_RT_OK(trnrtStreamSynchronize(stream.get()));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(record.status, trnrtSuccess);
  EXPECT_EQ(record.stream, stream.get());
}

TEST(StreamCallbacks, RunWithTheErrorOfAFailedStream) {
  StreamGuard stream;
  std::vector<int> order;
  CallbackRecord first(&order, 1);
  CallbackRecord second(&order, 2);
  ASSERT_TRUE(trnccl::device::enqueue(stream.get(), [] {
                return trnccl::internalError("peer {} died", 3);
              }).isOk());
  ASSERT_RT_OK(trnrtStreamAddCallback(stream.get(), recordCallback, &first, 0));
  EXPECT_EQ(trnrtStreamSynchronize(stream.get()), trnrtErrorLaunchFailure);
  // Added after the failure: still runs, still told.
  ASSERT_RT_OK(trnrtStreamAddCallback(stream.get(), recordCallback, &second, 0));
  EXPECT_EQ(trnrtStreamSynchronize(stream.get()), trnrtErrorLaunchFailure);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  for (const CallbackRecord* r : {&first, &second}) {
    EXPECT_EQ(r->status, trnrtErrorLaunchFailure);
    EXPECT_EQ(r->message, "peer 3 died");
  }
}

TEST(StreamCallbacks, DefaultStreamAndDestroyDrain) {
  std::vector<int> order;
  CallbackRecord onDefault(&order, 1);
  CallbackRecord onDestroyed(&order, 2);
  ASSERT_RT_OK(trnrtStreamAddCallback(nullptr, recordCallback, &onDefault, 0));
  ASSERT_RT_OK(trnrtStreamSynchronize(nullptr));
  EXPECT_NE(onDefault.stream, nullptr);  // the resolved default stream, not NULL
  trnrtStream_t stream = nullptr;
  ASSERT_RT_OK(trnrtStreamCreate(&stream));
  ASSERT_RT_OK(trnrtStreamAddCallback(stream, recordCallback, &onDestroyed, 0));
  ASSERT_RT_OK(trnrtStreamDestroy(stream));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(StreamCallbacks, RejectBadArguments) {
  CallbackRecord record;
  EXPECT_EQ(trnrtStreamAddCallback(nullptr, nullptr, &record, 0), trnrtErrorInvalidValue);
  EXPECT_EQ(trnrtStreamAddCallback(nullptr, recordCallback, &record, 1), trnrtErrorInvalidValue);
  EXPECT_NE(std::string(trnrtGetLastErrorMessage()).find("flags"), std::string::npos);
}

TEST(Streams, DeviceSynchronizeWaitsForEveryStream) {
  DeviceGuard guard(5);
  StreamGuard a;
  StreamGuard b;
  std::atomic<int> done{0};
  for (trnrtStream_t s : {a.get(), b.get(), static_cast<trnrtStream_t>(nullptr)}) {
    ASSERT_TRUE(trnccl::device::enqueue(s, [&] {
                  std::this_thread::sleep_for(20ms);
                  ++done;
                  return Status::ok();
                }).isOk());
  }
  ASSERT_RT_OK(trnrtDeviceSynchronize());
  EXPECT_EQ(done.load(), 3);
}

TEST(Events, StreamWaitEventOrdersAcrossStreams) {
  StreamGuard a;
  StreamGuard b;
  EventGuard event;
  std::atomic<int> value{0};
  std::atomic<int> observed{-1};
  ASSERT_TRUE(trnccl::device::enqueue(a.get(), [&] {
                std::this_thread::sleep_for(50ms);
                value = 1;
                return Status::ok();
              }).isOk());
  ASSERT_RT_OK(trnrtEventRecord(event.get(), a.get()));
  ASSERT_RT_OK(trnrtStreamWaitEvent(b.get(), event.get(), 0));
  ASSERT_TRUE(trnccl::device::enqueue(b.get(), [&] {
                observed = value.load();
                return Status::ok();
              }).isOk());
  ASSERT_RT_OK(trnrtStreamSynchronize(b.get()));
  EXPECT_EQ(observed.load(), 1);
}

TEST(Events, WaitCapturesTheRecordAtCallTime) {
  StreamGuard a;
  StreamGuard b;
  EventGuard event;
  ASSERT_RT_OK(trnrtEventRecord(event.get(), a.get()));
  ASSERT_RT_OK(trnrtStreamSynchronize(a.get()));
  ASSERT_RT_OK(trnrtStreamWaitEvent(b.get(), event.get(), 0));
  // Re-record behind a blocked task: b waits for the old record only, so it must finish.
  std::latch release(1);
  ASSERT_TRUE(trnccl::device::enqueue(a.get(), [&] {
                release.wait();
                return Status::ok();
              }).isOk());
  ASSERT_RT_OK(trnrtEventRecord(event.get(), a.get()));
  EXPECT_EQ(trnrtEventQuery(event.get()), trnrtErrorNotReady);  // re-record resets to pending
  ASSERT_RT_OK(trnrtStreamSynchronize(b.get()));
  release.count_down();
  ASSERT_RT_OK(trnrtEventSynchronize(event.get()));
  EXPECT_EQ(trnrtEventQuery(event.get()), trnrtSuccess);
}

TEST(Events, NeverRecordedEventIsComplete) {
  StreamGuard b;
  EventGuard event;
  EXPECT_EQ(trnrtEventQuery(event.get()), trnrtSuccess);
  ASSERT_RT_OK(trnrtEventSynchronize(event.get()));
  ASSERT_RT_OK(trnrtStreamWaitEvent(b.get(), event.get(), 0));
  ASSERT_RT_OK(trnrtStreamSynchronize(b.get()));
}

TEST(Events, ElapsedTimeCoversASleep) {
  StreamGuard stream;
  EventGuard start;
  EventGuard end;
  ASSERT_RT_OK(trnrtEventRecord(start.get(), stream.get()));
  ASSERT_TRUE(trnccl::device::enqueue(stream.get(), [] {
                std::this_thread::sleep_for(25ms);
                return Status::ok();
              }).isOk());
  ASSERT_RT_OK(trnrtEventRecord(end.get(), stream.get()));
  ASSERT_RT_OK(trnrtEventSynchronize(end.get()));
  float ms = -1;
  ASSERT_RT_OK(trnrtEventElapsedTime(&ms, start.get(), end.get()));
  EXPECT_GE(ms, 25.0f);
  EXPECT_LT(ms, 5000.0f);
}

TEST(Events, ElapsedTimeOfPendingEventIsNotReady) {
  StreamGuard stream;
  EventGuard start;
  EventGuard end;
  std::latch release(1);
  ASSERT_RT_OK(trnrtEventRecord(start.get(), stream.get()));
  ASSERT_TRUE(trnccl::device::enqueue(stream.get(), [&] {
                release.wait();
                return Status::ok();
              }).isOk());
  ASSERT_RT_OK(trnrtEventRecord(end.get(), stream.get()));
  float ms = 0;
  EXPECT_EQ(trnrtEventElapsedTime(&ms, start.get(), end.get()), trnrtErrorNotReady);
  EXPECT_EQ(trnrtEventQuery(end.get()), trnrtErrorNotReady);
  release.count_down();
  ASSERT_RT_OK(trnrtStreamSynchronize(stream.get()));
  ASSERT_RT_OK(trnrtEventElapsedTime(&ms, start.get(), end.get()));
}

TEST(Events, RejectsNullHandles) {
  EventGuard event;
  float ms = 0;
  EXPECT_EQ(trnrtEventRecord(nullptr, nullptr), trnrtErrorInvalidResourceHandle);
  EXPECT_NE(std::string(trnrtGetLastErrorMessage()).find("null event"), std::string::npos);
  EXPECT_EQ(trnrtEventSynchronize(nullptr), trnrtErrorInvalidResourceHandle);
  EXPECT_EQ(trnrtEventQuery(nullptr), trnrtErrorInvalidResourceHandle);
  EXPECT_EQ(trnrtEventDestroy(nullptr), trnrtErrorInvalidResourceHandle);
  EXPECT_EQ(trnrtStreamWaitEvent(nullptr, nullptr, 0), trnrtErrorInvalidResourceHandle);
  EXPECT_EQ(trnrtEventElapsedTime(&ms, event.get(), nullptr), trnrtErrorInvalidResourceHandle);
  EXPECT_EQ(trnrtEventElapsedTime(&ms, event.get(), event.get()),
            trnrtErrorInvalidResourceHandle);  // never recorded
  EXPECT_EQ(trnrtEventCreate(nullptr), trnrtErrorInvalidValue);
}

TEST(Events, DestroyWhileRecordPendingIsSafe) {
  StreamGuard stream;
  std::latch release(1);
  ASSERT_TRUE(trnccl::device::enqueue(stream.get(), [&] {
                release.wait();
                return Status::ok();
              }).isOk());
  trnrtEvent_t event = nullptr;
  ASSERT_RT_OK(trnrtEventCreate(&event));
  ASSERT_RT_OK(trnrtEventRecord(event, stream.get()));
  ASSERT_RT_OK(trnrtEventDestroy(event));
  release.count_down();
  ASSERT_RT_OK(trnrtStreamSynchronize(stream.get()));
}

}  // namespace
