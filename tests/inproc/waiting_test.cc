// Waiting in a collective (common/backoff.h, schedule/executor.cc): a rank whose peer arrives
// 200 ms late spends that time asleep — its stream worker waiting for the peer's message, its
// caller in trnrtStreamSynchronize — and both wake when the peer's data comes.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <thread>
#include <vector>

#include "support/ranks.h"

namespace trnccl::testing {
namespace {

using namespace std::chrono_literals;

std::chrono::nanoseconds processCpu() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

TEST(Waiting, ARankWaitingForALatePeerSleeps) {
  constexpr size_t kCount = 16;  // 64 bytes: the small-message path
  Ranks& ranks = Ranks::get(2);
  std::vector<void*> bufs(2, nullptr);
  for (int r = 0; r < 2; ++r) {
    trnrtSetDevice(r);
    ASSERT_EQ(trnrtMalloc(&bufs[r], kCount * sizeof(float)), trnrtSuccess);
  }
  auto allReduce = [&](int r) {
    std::vector<float> v(kCount, static_cast<float>(r + 1));
    EXPECT_EQ(trnrtMemcpy(bufs[r], v.data(), sizeof(float) * kCount, trnrtMemcpyHostToDevice),
              trnrtSuccess);
    EXPECT_EQ(trncclAllReduce(bufs[r], bufs[r], kCount, trncclFloat32, trncclSum, ranks.comm(r),
                              ranks.stream(r)),
              trncclSuccess);
    EXPECT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess);
    EXPECT_EQ(trnrtMemcpy(v.data(), bufs[r], sizeof(float) * kCount, trnrtMemcpyDeviceToHost),
              trnrtSuccess);
    EXPECT_EQ(v, std::vector<float>(kCount, 3.0f)) << "rank " << r;
  };
  ranks.run(allReduce);  // warm: planned, connections touched

  std::chrono::nanoseconds cpu{};
  std::chrono::steady_clock::duration wall{};
  ranks.run([&](int r) {
    if (r == 1) {
      std::this_thread::sleep_for(200ms);  // rank 0 waits for this rank meanwhile
      allReduce(r);
      return;
    }
    const auto cpu0 = processCpu();
    const auto t0 = std::chrono::steady_clock::now();
    allReduce(r);
    wall = std::chrono::steady_clock::now() - t0;
    cpu = processCpu() - cpu0;
  });
  EXPECT_GE(wall, 150ms);
  // Rank 0's worker and caller spinning or yielding through the wait would take ~200 ms of CPU
  // each on an idle machine (and not 10x less on a loaded one); asleep, they and every idle
  // thread of the process take a few ms.
  EXPECT_LT(cpu, 40ms) << "process CPU " << cpu.count() / 1000 << " us over "
                       << std::chrono::duration_cast<std::chrono::microseconds>(wall).count()
                       << " us of waiting";
  for (int r = 0; r < 2; ++r) {
    trnrtSetDevice(r);
    EXPECT_EQ(trnrtFree(bufs[r]), trnrtSuccess);
  }
}

}  // namespace
}  // namespace trnccl::testing
