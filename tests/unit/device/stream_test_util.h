// Shared helpers for the stream waiter and producer tests (src/device/stream.h).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "device/device_api.h"
#include "device/stream.h"
#include "trnccl/trnrt.h"

namespace stream_test {

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

inline void enqueueRecorder(trnrtStream* stream, Seen* seen) {
  ASSERT_TRUE(trnccl::device::enqueue(stream, [seen] {
                seen->thread = std::this_thread::get_id();
                seen->stream = Stream::current();
                trnrtGetDevice(&seen->device);
                return Status::ok();
              }).isOk());
}

}  // namespace stream_test
