// No library thread reads the environment (common/thread.h): glibc's getenv() races with a
// setenv()/unsetenv() on another thread, and programs change their environment after init.
// The CI run of 2026-11-25 crashed in getenv() on a stream worker reading TRNCCL_WAIT_* at
// its first wait while the test's main thread called unsetenv().
//
// getenv() is interposed for this binary: libtrnrt's calls resolve to the definition below
// (an executable's symbol comes first), which forwards to libc's and records what threads
// the test did not start read. The case runs in a process of its own (ctest
// inproc.environment), so the settings read once per process are still unread when it starts.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/ranks.h"

namespace {

std::atomic<bool> gWatching{false};
thread_local bool tUserThread = false;
std::mutex gMu;
std::vector<std::string> gReadByLibraryThreads;

}  // namespace

extern "C" char* getenv(const char* name) {
  using Fn = char* (*)(const char*);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "getenv"));
  if (gWatching.load(std::memory_order_relaxed) && !tUserThread) {
    std::lock_guard<std::mutex> lock(gMu);
    gReadByLibraryThreads.emplace_back(name);
  }
  return real(name);
}

namespace trnccl::testing {
namespace {

// 4 ranks as 2 emulated instances of 2: shm inside an instance (stream workers), the network
// transport across (ofi's waker and liveness threads when built, else tcp's I/O thread).
TEST(EnvironmentQuiet, LibraryThreadsNeverReadTheEnvironment) {
  constexpr int n = 4;
  tUserThread = true;
  setenv("TRNCCL_EMU_RANKS_PER_NODE", "2", 1);
  {
    Ranks ranks(n);  // init's own threads read the environment inside the call; not watched
    unsetenv("TRNCCL_EMU_RANKS_PER_NODE");
    gWatching = true;
    for (size_t count : {size_t{16}, size_t{1} << 16}) {
      ranks.run([&](int r) {
        tUserThread = true;
        void* buf = nullptr;
        ASSERT_EQ(trnrtMalloc(&buf, count * sizeof(float)), trnrtSuccess);
        ASSERT_EQ(trncclAllReduce(buf, buf, count, trncclFloat32, trncclSum, ranks.comm(r),
                                  ranks.stream(r)),
                  trncclSuccess);
        EXPECT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess);
        trnrtFree(buf);
      });
    }
    // Long enough for every idle waiter to pass its spin and yield stages and block.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  gWatching = false;
  std::lock_guard<std::mutex> lock(gMu);
  std::string names;
  for (const std::string& s : gReadByLibraryThreads) names += s + " ";
  EXPECT_TRUE(gReadByLibraryThreads.empty()) << "read by library threads: " << names;
}

}  // namespace
}  // namespace trnccl::testing
