// The plan cache's lock-free hit (comm/plan_cache.h): each thread keeps the entries it found
// last, which a clear() from any thread must invalidate, which must never answer for another
// cache (a slot is shared by every kRecent-th cache, and a destroyed cache's successor may
// reuse its address), and which must not change what the calls do: stream order across hits,
// a new plan after setTuning, errors of bad arguments.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/handle.h"
#include "comm/communicator.h"
#include "comm/plan_cache.h"
#include "support/ranks.h"
#include "support/tuning.h"

namespace trnccl::testing {
namespace {

schedule::Schedule named(const std::string& name) {
  schedule::Schedule s;
  s.algorithm = name;
  return s;
}

comm::PlanKey keyOf(size_t count) {
  comm::PlanKey k;
  k.count = count;
  return k;
}

// Readers loop on find() while a writer clears and re-inserts the key under a new name, round
// after round. A reader that saw round k announced (after the writer's clear and insert) must
// not get a plan of an earlier round: its kept entry went with the clear.
TEST(PlanCacheThreads, AClearFromAnotherThreadInvalidatesEveryThreadsKeptEntry) {
  comm::PlanCache cache;
  const comm::PlanKey key = keyOf(8);
  constexpr int kRounds = 100;
  constexpr int kReaders = 3;
  std::atomic<int> round{0};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> stale{0}, found{0};
  cache.insert(key, named("0"));
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t) {
    readers.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) {
        const int seen = round.load(std::memory_order_acquire);
        auto plan = cache.find(key);
        if (plan == nullptr) continue;  // between a clear and its insert
        found.fetch_add(1, std::memory_order_relaxed);
        if (std::stoi(plan->algorithm) < seen) stale.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int k = 1; k <= kRounds; ++k) {
    cache.clear();
    cache.insert(key, named(std::to_string(k)));
    round.store(k, std::memory_order_release);
    // Let the readers hit their kept entry a few times before the next clear.
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    while (std::chrono::steady_clock::now() < until) std::this_thread::yield();
  }
  done.store(true, std::memory_order_release);
  for (auto& t : readers) t.join();
  EXPECT_EQ(stale.load(), 0u);
  EXPECT_GT(found.load(), 0u);
  EXPECT_EQ(cache.find(key)->algorithm, std::to_string(kRounds));
}

// More caches than a thread keeps slots for, the same key in each under another name: every
// find answers with its own cache's plan (kept entries of caches sharing a slot never answer
// for each other), and the hits are counted per cache.
TEST(PlanCacheThreads, KeptEntriesAnswerOnlyForTheirOwnCache) {
  constexpr size_t kCaches = comm::PlanCache::kRecent * 2 + 1;
  std::vector<std::unique_ptr<comm::PlanCache>> caches;
  const comm::PlanKey key = keyOf(16);
  for (size_t i = 0; i < kCaches; ++i) {
    caches.push_back(std::make_unique<comm::PlanCache>());
    caches.back()->insert(key, named("cache " + std::to_string(i)));
  }
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < kCaches; ++i) {
      for (int again = 0; again < 2; ++again) {  // the second find is the kept entry's
        auto plan = caches[i]->find(key);
        ASSERT_NE(plan, nullptr) << "cache " << i;
        EXPECT_EQ(plan->algorithm, "cache " + std::to_string(i));
      }
    }
  }
  for (size_t i = 0; i < kCaches; ++i) {
    EXPECT_EQ(caches[i]->hits(), 6u) << "cache " << i;
    EXPECT_EQ(caches[i]->misses(), 0u) << "cache " << i;
  }
}

// A cache destroyed and another made (possibly at the same address): the thread's kept entry
// of the first never answers for the second.
TEST(PlanCacheThreads, ADestroyedCachesEntryNeverAnswersForItsSuccessor) {
  const comm::PlanKey key = keyOf(32);
  for (int i = 0; i < 2 * static_cast<int>(comm::PlanCache::kRecent) + 1; ++i) {
    auto cache = std::make_unique<comm::PlanCache>();
    EXPECT_EQ(cache->find(key), nullptr) << "cache " << i << " is new";
    cache->insert(key, named("x"));
    EXPECT_NE(cache->find(key), nullptr);
  }
}

// Two ranks, each on one thread throughout (so that its kept entries persist): calls chained
// through the same buffers without synchronizing in between, hits after the first of each
// signature, run in stream order; then rank 0's thread changes both communicators' tuning
// while rank 1's thread keeps its entry: the next identical call misses on both and runs the
// new algorithm.
TEST(PlanCacheThreads, HitsKeepStreamOrderAndSetTuningFromAnotherThreadMisses) {
  Ranks ranks(2);
  ScopedTuning tuning(ranks, "ring");
  constexpr size_t kCount = 16;
  std::barrier sync(2);
  ranks.run([&](int r) {
    comm::Communicator& c = *ranks.comm(r)->impl;
    float* a = nullptr;
    float* b = nullptr;
    ASSERT_EQ(trnrtMalloc(reinterpret_cast<void**>(&a), kCount * sizeof(float)), trnrtSuccess);
    ASSERT_EQ(trnrtMalloc(reinterpret_cast<void**>(&b), kCount * sizeof(float)), trnrtSuccess);
    auto run = [&](int chained) {  // a -> b -> a ...: each step doubles the rank-summed value
      std::vector<float> v(kCount, 1.0f + r);  // sum over ranks: 3
      ASSERT_EQ(trnrtMemcpy(a, v.data(), sizeof(float) * kCount, trnrtMemcpyHostToDevice),
                trnrtSuccess);
      for (int i = 0; i < chained; ++i) {
        float* from = i % 2 == 0 ? a : b;
        float* to = i % 2 == 0 ? b : a;
        ASSERT_EQ(trncclAllReduce(from, to, kCount, trncclFloat32, trncclSum, ranks.comm(r),
                                  ranks.stream(r)),
                  trncclSuccess);
      }
      ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess);
      ASSERT_EQ(trnrtMemcpy(v.data(), chained % 2 == 0 ? a : b, sizeof(float) * kCount,
                            trnrtMemcpyDeviceToHost),
                trnrtSuccess);
      const float want = 3.0f * static_cast<float>(1 << (chained - 1));
      for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(v[i], want) << "rank " << r << " at " << i;
    };
    const uint64_t misses0 = c.planCache().misses(), hits0 = c.planCache().hits();
    // Two signatures (a -> b, b -> a): 2 misses, 7 hits. An odd number of calls: the last
    // (a -> b, the thread's kept entry) is the first of the next run.
    run(9);
    EXPECT_EQ(c.planCache().misses() - misses0, 2u);
    EXPECT_EQ(c.planCache().hits() - hits0, 7u);
    EXPECT_EQ(c.lastPlanned(), "ring");
    sync.arrive_and_wait();             // both synchronized: no call of either rank is pending
    if (r == 0) tuning.set("oneshot");  // both communicators, from rank 0's thread
    sync.arrive_and_wait();
    const uint64_t misses1 = c.planCache().misses(), hits1 = c.planCache().hits();
    run(9);
    EXPECT_EQ(c.planCache().misses() - misses1, 2u) << "rank " << r;
    EXPECT_EQ(c.planCache().hits() - hits1, 7u) << "rank " << r;
    EXPECT_EQ(c.lastPlanned(), "oneshot") << "rank " << r;
    trnrtFree(a);
    trnrtFree(b);
  });
}

// The inline checks pass only what is plainly valid; everything else still gets its message.
TEST(PlanCacheThreads, BadArgumentsStillFailWithTheirMessage) {
  Ranks ranks(2);
  float buf[4] = {};
  auto lastError = [&] { return std::string(trncclGetLastError(ranks.comm(0))); };
  EXPECT_EQ(trncclAllReduce(buf, buf, 4, static_cast<trncclDataType_t>(-1), trncclSum,
                            ranks.comm(0), nullptr),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("invalid datatype -1"), std::string::npos) << lastError();
  EXPECT_EQ(trncclAllReduce(buf, buf, 4, trncclFloat, static_cast<trncclRedOp_t>(-1), ranks.comm(0),
                            nullptr),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("invalid reduction op -1"), std::string::npos) << lastError();
  // Past the inline bound (2^56 elements), the full check decides: this many doubles overflow.
  EXPECT_EQ(
      trncclAllReduce(buf, buf, SIZE_MAX / 8, trncclFloat64, trncclSum, ranks.comm(0), nullptr),
      trncclInvalidArgument);
  EXPECT_NE(lastError().find("overflows"), std::string::npos) << lastError();
  EXPECT_EQ(trncclAllReduce(buf, buf, 4, trncclFloat, trncclSum, nullptr, nullptr),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("comm is NULL"), std::string::npos) << lastError();
}

}  // namespace
}  // namespace trnccl::testing
