// The per-communicator plan cache (comm/plan_cache.h, issue 14): a repeated call reuses its
// plan, a call that differs in any field of the signature is planned anew, and results stay
// right either way (the data is read at run time, never frozen into a plan).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "api/handle.h"
#include "comm/communicator.h"
#include "support/ranks.h"
#include "support/tuning.h"
#include "transports/shm/testing.h"

namespace trnccl::testing {
namespace {

constexpr int kRanks = 2;
constexpr size_t kCount = 64;

struct Counts {
  uint64_t hits = 0, misses = 0;
};

Counts counts(const Ranks& ranks, int r) {
  const comm::PlanCache& cache = ranks.comm(r)->impl->planCache();
  return {cache.hits(), cache.misses()};
}

// One rank's device buffers: two of kCount floats, and one of kRanks * kCount (all-gather).
struct Buffers {
  void* a = nullptr;
  void* b = nullptr;
  void* wide = nullptr;
  Buffers() {
    EXPECT_EQ(trnrtMalloc(&a, kCount * sizeof(float)), trnrtSuccess);
    EXPECT_EQ(trnrtMalloc(&b, kCount * sizeof(float)), trnrtSuccess);
    EXPECT_EQ(trnrtMalloc(&wide, kRanks * kCount * sizeof(float)), trnrtSuccess);
  }
  ~Buffers() {
    trnrtFree(a);
    trnrtFree(b);
    trnrtFree(wide);
  }
  // Fills `a` with rank + 1 + base + i: the sum over ranks is 3 + 2 * (base + i).
  void fill(int rank, float base) const {
    std::vector<float> v(kCount);
    for (size_t i = 0; i < kCount; ++i) v[i] = static_cast<float>(rank + 1) + base + i;
    EXPECT_EQ(trnrtMemcpy(a, v.data(), kCount * sizeof(float), trnrtMemcpyHostToDevice),
              trnrtSuccess);
  }
  static std::vector<float> read(const void* p, size_t n) {
    std::vector<float> v(n);
    EXPECT_EQ(trnrtMemcpy(v.data(), p, n * sizeof(float), trnrtMemcpyDeviceToHost), trnrtSuccess);
    return v;
  }
};

// Two fresh ranks (their caches start empty) and their buffers.
class Fixture : public ::testing::Test {
 protected:
  Fixture() : ranks_(kRanks), bufs_(kRanks) {
    ranks_.run([&](int r) { bufs_[r] = std::make_unique<Buffers>(); });  // on rank r's device
  }

  // All-reduce of `count` floats of `a` (filled with `base`) into `b` (or `a`) on every rank;
  // checks every rank's result.
  void allReduce(float base, size_t count, bool inPlace, trncclRedOp_t op = trncclSum) {
    ranks_.run([&](int r) {
      bufs_[r]->fill(r, base);
      void* recv = inPlace ? bufs_[r]->a : bufs_[r]->b;
      ASSERT_EQ(trncclAllReduce(bufs_[r]->a, recv, count, trncclFloat32, op, ranks_.comm(r),
                                ranks_.stream(r)),
                trncclSuccess)
          << trncclGetLastError(ranks_.comm(r));
      ASSERT_EQ(trnrtStreamSynchronize(ranks_.stream(r)), trnrtSuccess);
      auto got = Buffers::read(recv, count);
      for (size_t i = 0; i < count; ++i) {
        const float mine = static_cast<float>(r + 1) + base + i;
        const float other = static_cast<float>(2 - r) + base + i;
        const float want = op == trncclSum ? mine + other : std::max(mine, other);
        ASSERT_EQ(got[i], want) << "rank " << r << " element " << i;
      }
    });
  }

  // Checks that every rank's counters moved by exactly (hits, misses) since `before`.
  void expectDelta(const std::vector<Counts>& before, uint64_t hits, uint64_t misses,
                   const char* what) {
    for (int r = 0; r < kRanks; ++r) {
      Counts now = counts(ranks_, r);
      EXPECT_EQ(now.hits - before[r].hits, hits) << what << ", rank " << r;
      EXPECT_EQ(now.misses - before[r].misses, misses) << what << ", rank " << r;
    }
  }

  std::vector<Counts> snapshot() const {
    std::vector<Counts> c;
    for (int r = 0; r < kRanks; ++r) c.push_back(counts(ranks_, r));
    return c;
  }

  Ranks ranks_;
  std::vector<std::unique_ptr<Buffers>> bufs_;
};

using PlanCache = Fixture;

TEST_F(PlanCache, SecondIdenticalCallHitsAndReadsTheNewData) {
  auto before = snapshot();
  allReduce(0, kCount, false);
  expectDelta(before, 0, 1, "first call");
  before = snapshot();
  allReduce(100, kCount, false);  // same signature, different data: results of the new data
  expectDelta(before, 1, 0, "second identical call");
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(ranks_.comm(r)->impl->planCache().size(), 1u);
}

TEST_F(PlanCache, EveryFieldOfTheSignatureMisses) {
  allReduce(0, kCount, false);
  auto before = snapshot();
  allReduce(1, kCount - 1, false);
  expectDelta(before, 0, 1, "count");
  before = snapshot();
  allReduce(2, kCount, true);
  expectDelta(before, 0, 1, "in place (recv buffer)");
  before = snapshot();
  allReduce(3, kCount, false, trncclMax);
  expectDelta(before, 0, 1, "op");
  before = snapshot();
  allReduce(4, kCount, false);  // the first call's signature again (and base 4 in `a` below)
  expectDelta(before, 1, 0, "first signature again");
  before = snapshot();
  // Datatype, collective, root and stream, each alone on the same buffers.
  ranks_.run([&](int r) {
    trncclComm_t c = ranks_.comm(r);
    trnrtStream_t s = ranks_.stream(r);
    const Buffers& b = *bufs_[r];
    ASSERT_EQ(trncclAllReduce(b.a, b.b, kCount, trncclUint32, trncclSum, c, s), trncclSuccess);
    ASSERT_EQ(trncclAllGather(b.a, b.wide, kCount, trncclFloat32, c, s), trncclSuccess);
    ASSERT_EQ(trncclBroadcast(b.a, b.b, kCount, trncclFloat32, 0, c, s), trncclSuccess);
    ASSERT_EQ(trncclBroadcast(b.a, b.b, kCount, trncclFloat32, 1, c, s), trncclSuccess);
    ASSERT_EQ(trnrtStreamSynchronize(s), trnrtSuccess);
    // The last broadcast's root was rank 1: its values everywhere.
    auto got = Buffers::read(b.b, kCount);
    ASSERT_EQ(got[5], 2.0f + 4.0f + 5.0f);  // rank 1's input: rank + 1, base 4, i 5
    ASSERT_EQ(trncclAllReduce(b.a, b.b, kCount, trncclFloat32, trncclSum, c, nullptr),
              trncclSuccess);
    ASSERT_EQ(trnrtDeviceSynchronize(), trnrtSuccess);
    got = Buffers::read(b.b, kCount);
    ASSERT_EQ(got[5], 3.0f + 2 * (4.0f + 5.0f));  // on the default stream: still right
  });
  expectDelta(before, 0, 5, "datatype, collective, root 0, root 1, stream");
  before = snapshot();
  allReduce(5, kCount - 1, false);  // planned before: still cached
  expectDelta(before, 1, 0, "repeat of an earlier signature");
}

// A hit checks the entry found last before the table (one loop repeating one call): it must
// answer only its own key, and be forgotten with the table.
TEST_F(PlanCache, TheLastEntryAnswersOnlyItsKeyAndGoesWithTheTable) {
  comm::PlanCache& cache = ranks_.comm(0)->impl->planCache();
  comm::PlanKey a, b;
  a.count = 1;
  b.count = 2;
  schedule::Schedule sa, sb;
  sa.algorithm = "a";
  sb.algorithm = "b";
  cache.insert(a, sa);
  cache.insert(b, sb);
  for (int round = 0; round < 2; ++round) {
    ASSERT_NE(cache.find(a), nullptr);
    EXPECT_EQ(cache.find(a)->algorithm, "a");  // now the last entry
    ASSERT_NE(cache.find(b), nullptr);
    EXPECT_EQ(cache.find(b)->algorithm, "b");
  }
  cache.clear();
  EXPECT_EQ(cache.find(b), nullptr);
  EXPECT_EQ(cache.find(a), nullptr);
}

// TRNCCL_ALGO, TRNCCL_NCHANNELS and TRNCCL_CHECK are read once per communicator, at init
// (src/plan/overrides.h; a getenv per call cost ~30 % of a small call): set afterwards they
// change nothing, not even a call planned anew; a communicator created afterwards sees them.
TEST_F(PlanCache, TunerAndCheckVariablesAreReadAtInit) {
  using transport::shm::testing::Event;
  auto& shm = transport::shm::testing::counters();
  int64_t ll0 = shm.get(Event::kLlMessages);
  allReduce(0, kCount, false);
  const int64_t llPerCall = shm.get(Event::kLlMessages) - ll0;
  ASSERT_GT(llPerCall, 0);  // 256 bytes: the LL protocol, whose messages the check adds to
  const std::string chosen = ranks_.comm(0)->impl->lastPlanned();
  const std::string other = chosen == "ring" ? "mesh" : "ring";
  setenv("TRNCCL_ALGO", other.c_str(), 1);
  setenv("TRNCCL_NCHANNELS", "2", 1);
  setenv("TRNCCL_CHECK", "1", 1);
  auto before = snapshot();
  ll0 = shm.get(Event::kLlMessages);
  allReduce(1, kCount, false);
  expectDelta(before, 1, 0, "same call after setenv");
  EXPECT_EQ(shm.get(Event::kLlMessages) - ll0, llPerCall) << "TRNCCL_CHECK read per call?";
  before = snapshot();
  allReduce(2, kCount - 1, false);  // planned anew: still with the values of init
  expectDelta(before, 0, 1, "new signature after setenv");
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(ranks_.comm(r)->impl->lastPlanned(), chosen) << "rank " << r;
    EXPECT_FALSE(ranks_.comm(r)->impl->config().check) << "rank " << r;
  }
  {
    Ranks fresh(kRanks);  // created with the variables set
    for (int r = 0; r < kRanks; ++r) {
      const comm::Config& config = fresh.comm(r)->impl->config();
      EXPECT_EQ(config.tuning.algo, other) << "rank " << r;
      EXPECT_EQ(config.tuning.channels, 2) << "rank " << r;
      EXPECT_TRUE(config.check) << "rank " << r;
    }
    fresh.run([&](int r) {
      ASSERT_EQ(trncclAllReduce(bufs_[r]->a, bufs_[r]->b, kCount, trncclFloat32, trncclSum,
                                fresh.comm(r), fresh.stream(r)),
                trncclSuccess);
      ASSERT_EQ(trnrtStreamSynchronize(fresh.stream(r)), trnrtSuccess);
      EXPECT_EQ(fresh.comm(r)->impl->lastPlanned(), other) << "rank " << r;
    });
  }
  unsetenv("TRNCCL_ALGO");
  unsetenv("TRNCCL_NCHANNELS");
  unsetenv("TRNCCL_CHECK");
}

// What the executor derives once per cached plan (schedule::Layout: groups, message numbers,
// the steps' senders and scratch mapping) must stay right while the plan is re-run: across
// tuning changes (the cache emptied, other algorithms planned on the same buffers), in place
// (the 2-rank oneshot goes through scratch), and between point-to-point groups, whose tags
// come from per-peer counters and must not be frozen into anything cached.
TEST_F(PlanCache, CachedPlansRerunRightAcrossTuningP2pAndScratch) {
  ScopedTuning tuning(ranks_);
  float base = 0;
  for (const char* algo : {"oneshot", "ring", "", "oneshot"}) {
    tuning.set(algo);
    for (int call = 0; call < 3; ++call) {
      for (bool inPlace : {false, true}) {
        auto before = snapshot();
        allReduce(base += 10, kCount, inPlace);
        expectDelta(before, call == 0 ? 0 : 1, call == 0 ? 1 : 0, algo);
        if (*algo != 0) {
          for (int r = 0; r < kRanks; ++r) EXPECT_EQ(ranks_.comm(r)->impl->lastPlanned(), algo);
        }
      }
      // A send/recv group between the cached calls: its tags move the p2p counters only.
      ranks_.run([&](int r) {
        std::vector<float> v(kCount);
        for (size_t i = 0; i < kCount; ++i) v[i] = base + static_cast<float>(100 * r + i);
        EXPECT_EQ(
            trnrtMemcpy(bufs_[r]->a, v.data(), kCount * sizeof(float), trnrtMemcpyHostToDevice),
            trnrtSuccess);
        const int peer = 1 - r;
        ASSERT_EQ(trncclGroupStart(), trncclSuccess);
        ASSERT_EQ(
            trncclSend(bufs_[r]->a, kCount, trncclFloat32, peer, ranks_.comm(r), ranks_.stream(r)),
            trncclSuccess);
        ASSERT_EQ(
            trncclRecv(bufs_[r]->b, kCount, trncclFloat32, peer, ranks_.comm(r), ranks_.stream(r)),
            trncclSuccess);
        ASSERT_EQ(trncclGroupEnd(), trncclSuccess);
        ASSERT_EQ(trnrtStreamSynchronize(ranks_.stream(r)), trnrtSuccess);
        auto got = Buffers::read(bufs_[r]->b, kCount);
        for (size_t i = 0; i < kCount; ++i) {
          ASSERT_EQ(got[i], base + static_cast<float>(100 * peer + i)) << "rank " << r;
        }
      });
    }
  }
}

}  // namespace
}  // namespace trnccl::testing
