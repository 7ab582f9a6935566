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
