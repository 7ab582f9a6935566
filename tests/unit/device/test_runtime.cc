// Devices, memory and the C API's argument checking.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "device/device_api.h"
#include "trnccl/trnrt.h"
#include "unit/device/runtime_test_util.h"

namespace {

TEST(Devices, CountDefaultsToTrn1Cores) {
  int count = 0;
  ASSERT_RT_OK(trnrtGetDeviceCount(&count));
  const char* env = std::getenv("TRNRT_NUM_DEVICES");
  EXPECT_EQ(count, env != nullptr ? std::atoi(env) : 32);
}

TEST(Devices, CurrentDeviceIsPerThread) {
  DeviceGuard guard(3);
  int device = -1;
  ASSERT_RT_OK(trnrtGetDevice(&device));
  EXPECT_EQ(device, 3);
  EXPECT_EQ(trnccl::device::currentDevice(), 3);
  int other = -1;
  std::thread([&] { trnrtGetDevice(&other); }).join();
  EXPECT_EQ(other, 0);  // a new thread starts on device 0
}

TEST(Devices, RejectsOutOfRangeDevice) {
  int count = 0;
  ASSERT_RT_OK(trnrtGetDeviceCount(&count));
  EXPECT_EQ(trnrtSetDevice(-1), trnrtErrorInvalidDevice);
  EXPECT_EQ(trnrtSetDevice(count), trnrtErrorInvalidDevice);
  EXPECT_NE(std::string(trnrtGetLastErrorMessage()).find("invalid device"), std::string::npos);
  int device = -1;
  ASSERT_RT_OK(trnrtGetDevice(&device));
  EXPECT_EQ(device, 0);  // a failed set leaves the current device alone
}

TEST(Memory, OutOfMemoryMessage) {
  int count = 0;
  ASSERT_RT_OK(trnrtGetDeviceCount(&count));
  // A dedicated device, first used here, so the small capacity applies to it alone.
  const int device = count - 1;
  constexpr size_t kCapacity = 1 << 20;
  setenv("TRNRT_HBM_BYTES", std::to_string(kCapacity).c_str(), 1);
  DeviceGuard guard(device);
  void* whole = nullptr;
  trnrtError_t first = trnrtMalloc(&whole, kCapacity);
  unsetenv("TRNRT_HBM_BYTES");
  ASSERT_EQ(first, trnrtSuccess) << trnrtGetLastErrorMessage();

  void* more = reinterpret_cast<void*>(1);
  EXPECT_EQ(trnrtMalloc(&more, 17179869184ull), trnrtErrorMemoryAllocation);
  EXPECT_EQ(more, nullptr);
  EXPECT_EQ(std::string(trnrtGetLastErrorMessage()),
            fmt::format("trnrtMalloc: out of device memory on device {}: requested 17179869184 "
                        "bytes, 0 of {} free",
                        device, kCapacity));
  ASSERT_RT_OK(trnrtFree(whole));
  void* again = nullptr;
  ASSERT_RT_OK(trnrtMalloc(&again, kCapacity));  // freeing really returned the space
  ASSERT_RT_OK(trnrtFree(again));
}

TEST(Memory, SizeZeroGivesUniqueFreeablePointers) {
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_RT_OK(trnrtMalloc(&a, 0));
  ASSERT_RT_OK(trnrtMalloc(&b, 0));
  EXPECT_NE(a, nullptr);
  EXPECT_NE(a, b);
  ASSERT_RT_OK(trnrtFree(a));
  ASSERT_RT_OK(trnrtFree(b));
}

TEST(Memory, PointersAre256ByteAligned) {
  std::vector<void*> ptrs(5);
  for (size_t i = 0; i < ptrs.size(); ++i) {
    ASSERT_RT_OK(trnrtMalloc(&ptrs[i], 1 + 100 * i));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ptrs[i]) % 256, 0u);
  }
  for (void* p : ptrs) ASSERT_RT_OK(trnrtFree(p));
}

TEST(Memory, FreeRejectsForeignPointers) {
  int onStack = 0;
  std::vector<char> onHeap(64);
  EXPECT_EQ(trnrtFree(&onStack), trnrtErrorInvalidValue);
  EXPECT_NE(std::string(trnrtGetLastErrorMessage()).find("not device memory"), std::string::npos);
  EXPECT_EQ(trnrtFree(onHeap.data()), trnrtErrorInvalidValue);
  void* p = nullptr;
  ASSERT_RT_OK(trnrtMalloc(&p, 1024));
  EXPECT_EQ(trnrtFree(static_cast<char*>(p) + 256), trnrtErrorInvalidValue);  // interior
  ASSERT_RT_OK(trnrtFree(p));
  EXPECT_EQ(trnrtFree(p), trnrtErrorInvalidValue);  // double free
  EXPECT_EQ(trnrtFree(nullptr), trnrtSuccess);
}

TEST(Memory, RejectsBadCopyArguments) {
  char host[16] = {};
  void* dev = nullptr;
  ASSERT_RT_OK(trnrtMalloc(&dev, sizeof(host)));
  EXPECT_EQ(trnrtMalloc(nullptr, 16), trnrtErrorInvalidValue);
  EXPECT_EQ(trnrtMemcpy(nullptr, host, 16, trnrtMemcpyHostToDevice), trnrtErrorInvalidValue);
  EXPECT_NE(std::string(trnrtGetLastErrorMessage()).find("trnrtMemcpy: null pointer"),
            std::string::npos);
  EXPECT_EQ(trnrtMemcpy(dev, nullptr, 16, trnrtMemcpyHostToDevice), trnrtErrorInvalidValue);
  EXPECT_EQ(trnrtMemcpyAsync(dev, nullptr, 16, trnrtMemcpyDefault, nullptr),
            trnrtErrorInvalidValue);
  EXPECT_EQ(trnrtMemcpy(dev, host, 16, static_cast<trnrtMemcpyKind>(5)), trnrtErrorInvalidValue);
  EXPECT_NE(std::string(trnrtGetLastErrorMessage()).find("invalid memcpy kind 5"),
            std::string::npos);
  EXPECT_EQ(trnrtMemcpy(dev, host, 16, static_cast<trnrtMemcpyKind>(-1)), trnrtErrorInvalidValue);
  EXPECT_EQ(trnrtMemset(nullptr, 0, 16), trnrtErrorInvalidValue);
  EXPECT_EQ(trnrtMemcpy(nullptr, nullptr, 0, trnrtMemcpyDefault), trnrtSuccess);  // no bytes
  EXPECT_EQ(trnrtGetDeviceCount(nullptr), trnrtErrorInvalidValue);
  EXPECT_EQ(trnrtGetDevice(nullptr), trnrtErrorInvalidValue);
  ASSERT_RT_OK(trnrtFree(dev));
}

TEST(Memory, MemcpyRoundTrip) {
  constexpr size_t kBytes = 4096 + 3;
  std::vector<uint8_t> in(kBytes), out(kBytes, 0);
  for (size_t i = 0; i < kBytes; ++i) in[i] = static_cast<uint8_t>(i * 7 + 1);
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_RT_OK(trnrtMalloc(&a, kBytes));
  ASSERT_RT_OK(trnrtMalloc(&b, kBytes));
  ASSERT_RT_OK(trnrtMemcpy(a, in.data(), kBytes, trnrtMemcpyHostToDevice));
  ASSERT_RT_OK(trnrtMemcpy(b, a, kBytes, trnrtMemcpyDeviceToDevice));
  ASSERT_RT_OK(trnrtMemcpy(out.data(), b, kBytes, trnrtMemcpyDeviceToHost));
  EXPECT_EQ(in, out);

  trnrtStream_t stream = nullptr;
  ASSERT_RT_OK(trnrtStreamCreate(&stream));
  std::vector<uint8_t> async(kBytes, 0);
  ASSERT_RT_OK(trnrtMemcpyAsync(async.data(), a, kBytes, trnrtMemcpyDefault, stream));
  ASSERT_RT_OK(trnrtStreamSynchronize(stream));
  EXPECT_EQ(in, async);
  ASSERT_RT_OK(trnrtStreamDestroy(stream));
  ASSERT_RT_OK(trnrtFree(a));
  ASSERT_RT_OK(trnrtFree(b));
}

TEST(Memory, Memset) {
  constexpr size_t kBytes = 1000;
  void* dev = nullptr;
  ASSERT_RT_OK(trnrtMalloc(&dev, kBytes));
  ASSERT_RT_OK(trnrtMemset(dev, 0xAB, kBytes));
  ASSERT_RT_OK(trnrtMemset(static_cast<char*>(dev) + 10, 0x01, 5));
  std::vector<uint8_t> out(kBytes);
  ASSERT_RT_OK(trnrtMemcpy(out.data(), dev, kBytes, trnrtMemcpyDeviceToHost));
  for (size_t i = 0; i < kBytes; ++i) {
    ASSERT_EQ(out[i], (i >= 10 && i < 15) ? 0x01 : 0xAB) << "byte " << i;
  }
  ASSERT_RT_OK(trnrtFree(dev));
}

TEST(Memory, ConcurrentMallocFreeNeverOverlaps) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  std::vector<std::vector<void*>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        void* p = nullptr;
        if (trnrtMalloc(&p, 300) != trnrtSuccess) return;
        std::memset(p, t, 300);  // a shared block would be clobbered by another thread
        got[t].push_back(p);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<void*> unique;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(got[t].size(), size_t{kPerThread});
    for (void* p : got[t]) {
      EXPECT_EQ(static_cast<uint8_t*>(p)[299], t);
      unique.insert(p);
    }
  }
  EXPECT_EQ(unique.size(), size_t{kThreads * kPerThread});
  for (void* p : unique) ASSERT_RT_OK(trnrtFree(p));
}

TEST(Locate, ReportsDeviceOffsetAndMappableFd) {
  DeviceGuard guard(1);
  constexpr size_t kBytes = 8192;
  void* first = nullptr;
  void* dev = nullptr;
  ASSERT_RT_OK(trnrtMalloc(&first, 512));
  ASSERT_RT_OK(trnrtMalloc(&dev, kBytes));
  auto loc = trnccl::device::locate(dev);
  auto locFirst = trnccl::device::locate(first);
  ASSERT_TRUE(loc.has_value() && locFirst.has_value());
  EXPECT_EQ(loc->device, 1);
  EXPECT_EQ(loc->pid, getpid());
  EXPECT_EQ(loc->offset - locFirst->offset,
            static_cast<size_t>(static_cast<char*>(dev) - static_cast<char*>(first)));
  // An interior pointer locates to its own offset.
  auto inner = trnccl::device::locate(static_cast<char*>(dev) + 100);
  ASSERT_TRUE(inner.has_value());
  EXPECT_EQ(inner->offset, loc->offset + 100);

  // Map the arena as a peer process would, through /proc, and see the same bytes.
  std::string path = fmt::format("/proc/{}/fd/{}", loc->pid, loc->arenaFd);
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
  void* map = ::mmap(nullptr, loc->arenaBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  ASSERT_NE(map, MAP_FAILED);
  auto* peer = static_cast<uint8_t*>(map) + loc->offset;
  EXPECT_NE(static_cast<void*>(peer), dev);  // a different mapping ...
  for (size_t i = 0; i < kBytes; ++i) static_cast<uint8_t*>(dev)[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(std::memcmp(peer, dev, kBytes), 0);  // ... of the same pages
  peer[5] = 0xEE;
  EXPECT_EQ(static_cast<uint8_t*>(dev)[5], 0xEE);
  ::munmap(map, loc->arenaBytes);

  int host = 0;
  EXPECT_FALSE(trnccl::device::locate(&host).has_value());
  ASSERT_RT_OK(trnrtFree(dev));
  ASSERT_RT_OK(trnrtFree(first));
}

TEST(ErrorStrings, EveryCodeHasADistinctString) {
  std::set<std::string> seen;
  for (int e = trnrtSuccess; e <= trnrtErrorUnknown; ++e) {
    std::string s = trnrtGetErrorString(static_cast<trnrtError_t>(e));
    EXPECT_FALSE(s.empty());
    EXPECT_EQ(s.find("unrecognized"), std::string::npos) << e;
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), size_t{trnrtErrorUnknown + 1});
}

}  // namespace
