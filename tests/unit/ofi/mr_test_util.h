// What the registration-cache tests share: device memory laid out in whole cache windows, and
// the ofi counters (transports/ofi/testing.h, per process and cumulative) as differences.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "transports/ofi/mr_cache.h"
#include "transports/ofi/testing.h"
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

struct CounterValues {
  int64_t zeroCopyPieces = 0;
  int64_t copiedPieces = 0;
  int64_t registrations = 0;
  int64_t cacheHits = 0;
  int64_t evictions = 0;
  int64_t liveRegistrations = 0;
};

// The counters' changes since construction.
class CounterDelta {
 public:
  CounterDelta() : start_(read()) {}
  CounterValues get() const {
    CounterValues now = read();
    now.zeroCopyPieces -= start_.zeroCopyPieces;
    now.copiedPieces -= start_.copiedPieces;
    now.registrations -= start_.registrations;
    now.cacheHits -= start_.cacheHits;
    now.evictions -= start_.evictions;
    now.liveRegistrations -= start_.liveRegistrations;
    return now;
  }

 private:
  static CounterValues read() {
    testing::Counters& c = testing::counters();
    CounterValues v;
    v.zeroCopyPieces = static_cast<int64_t>(c.zeroCopyPieces.load());
    v.copiedPieces = static_cast<int64_t>(c.copiedPieces.load());
    v.registrations = static_cast<int64_t>(c.registrations.load());
    v.cacheHits = static_cast<int64_t>(c.cacheHits.load());
    v.evictions = static_cast<int64_t>(c.evictions.load());
    v.liveRegistrations = c.liveRegistrations.load();
    return v;
  }
  CounterValues start_;
};

}  // namespace trnccl::transport::ofi::test
