// What the registration-cache tests share: device memory laid out in whole cache windows.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "transports/ofi/mr_cache.h"
#include "trnccl/trnrt.h"

namespace trnccl::transport::ofi::test {

// `windows` whole MrCache windows of emulated device memory (trnrtMalloc, freed on scope
// exit). Only the bytes a test writes get pages: the arena is a sparse memfd.
class DeviceWindows {
 public:
  explicit DeviceWindows(size_t windows) {
    size_t bytes = (windows + 1) * MrCache::kWindowBytes;  // room to align the first
    EXPECT_EQ(trnrtMalloc(&memory_, bytes), trnrtSuccess);
    auto address = reinterpret_cast<uintptr_t>(memory_);
    uintptr_t aligned =
        (address + MrCache::kWindowBytes - 1) / MrCache::kWindowBytes * MrCache::kWindowBytes;
    first_ = static_cast<std::byte*>(memory_) + (aligned - address);
  }
  ~DeviceWindows() { EXPECT_EQ(trnrtFree(memory_), trnrtSuccess); }
  DeviceWindows(const DeviceWindows&) = delete;
  DeviceWindows& operator=(const DeviceWindows&) = delete;

  bool ok() const { return memory_ != nullptr; }
  // Start of the i-th window (kWindowBytes-aligned).
  std::byte* window(size_t i) const { return first_ + i * MrCache::kWindowBytes; }

 private:
  void* memory_ = nullptr;
  std::byte* first_ = nullptr;
};

}  // namespace trnccl::transport::ofi::test
