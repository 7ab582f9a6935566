// Shared helpers for the runtime tests.
#pragma once

#include <gtest/gtest.h>

#include "trnccl/trnrt.h"

// Asserts a trnrt call succeeded, printing the error string and the thread's last message.
#define ASSERT_RT_OK(call)                                                                       \
  do {                                                                                           \
    trnrtError_t rt_err_ = (call);                                                               \
    ASSERT_EQ(rt_err_, trnrtSuccess)                                                             \
        << #call << ": " << trnrtGetErrorString(rt_err_) << " — " << trnrtGetLastErrorMessage(); \
  } while (0)

// Restores the current device on scope exit so tests do not leak it into each other.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    trnrtGetDevice(&saved_);
    EXPECT_EQ(trnrtSetDevice(device), trnrtSuccess);
  }
  ~DeviceGuard() { trnrtSetDevice(saved_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int saved_ = 0;
};

// A stream created on the current device and destroyed with the test.
class StreamGuard {
 public:
  StreamGuard() { EXPECT_EQ(trnrtStreamCreate(&stream_), trnrtSuccess); }
  ~StreamGuard() { EXPECT_EQ(trnrtStreamDestroy(stream_), trnrtSuccess); }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;
  trnrtStream_t get() const { return stream_; }

 private:
  trnrtStream_t stream_ = nullptr;
};

class EventGuard {
 public:
  EventGuard() { EXPECT_EQ(trnrtEventCreate(&event_), trnrtSuccess); }
  ~EventGuard() { EXPECT_EQ(trnrtEventDestroy(event_), trnrtSuccess); }
  EventGuard(const EventGuard&) = delete;
  EventGuard& operator=(const EventGuard&) = delete;
  trnrtEvent_t get() const { return event_; }

 private:
  trnrtEvent_t event_ = nullptr;
};
