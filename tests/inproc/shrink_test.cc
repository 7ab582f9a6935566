// Recovery at the front door (issue 18): trncclCommShrink, trncclCommRevoke and
// trncclCommGetFailedRanks with N ranks as threads. A rank "fails" here by destroying its
// communicator (its recovery port closes, as at process exit); tests/fault kills real
// processes. Each test makes its own communicators: revoking the shared ones would break the
// other tests.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "trnccl/trnccl.h"

namespace trnccl::testing {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kTimeoutMs = 60000;  // far above every bound the tests assert

std::string lastError() { return trncclGetLastError(nullptr); }

class Comms {
 public:
  explicit Comms(int n) : comms_(n, nullptr), streams_(n, nullptr) {
    trncclUniqueId id;
    EXPECT_EQ(trncclGetUniqueId(&id), trncclSuccess);
    run([&](int r) {
      trncclConfig_t config = TRNCCL_CONFIG_INITIALIZER;
      config.timeoutMs = kTimeoutMs;
      ASSERT_EQ(trncclCommInitRankConfig(&comms_[r], n, id, r, &config), trncclSuccess)
          << lastError();
      ASSERT_EQ(trnrtStreamCreate(&streams_[r]), trnrtSuccess);
    });
  }
  ~Comms() {
    for (size_t r = 0; r < comms_.size(); ++r) {
      trncclCommAbort(comms_[r]);
      trnrtStreamDestroy(streams_[r]);
    }
  }
  trncclComm_t& comm(int r) { return comms_[r]; }
  trnrtStream_t stream(int r) const { return streams_[r]; }
  void run(const std::function<void(int)>& fn) const {
    std::vector<std::thread> threads;
    for (size_t r = 0; r < comms_.size(); ++r) {
      threads.emplace_back([&, r] {
        trnrtSetDevice(static_cast<int>(r));
        fn(static_cast<int>(r));
      });
    }
    for (auto& t : threads) t.join();
  }

 private:
  std::vector<trncclComm_t> comms_;
  std::vector<trnrtStream_t> streams_;
};

// All-reduces `value` over `comm` on a fresh stream (a failed one stays failed); the sum.
int sumOver(trncclComm_t comm, int value) {
  trnrtStream_t stream = nullptr;
  EXPECT_EQ(trnrtStreamCreate(&stream), trnrtSuccess);
  std::vector<int32_t> v(1000, value);
  EXPECT_EQ(trncclAllReduce(v.data(), v.data(), v.size(), trncclInt32, trncclSum, comm, stream),
            trncclSuccess)
      << lastError();
  EXPECT_EQ(trnrtStreamSynchronize(stream), trnrtSuccess) << trnrtGetLastErrorMessage();
  trnrtStreamDestroy(stream);
  EXPECT_EQ(v.front(), v.back());
  return v.back();
}

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void expectRefused(trncclResult_t got, trncclResult_t want, const std::string& needle) {
  EXPECT_EQ(got, want) << lastError();
  EXPECT_NE(lastError().find(needle), std::string::npos) << lastError();
}

TEST(Shrink, BadArgumentsAreRefusedAndChangeNothing) {
  Comms c(3);
  trncclComm_t comm = c.comm(0);
  trncclComm_t out = nullptr;
  int one[] = {1}, twice[] = {1, 1}, self[] = {0}, far[] = {3}, negative[] = {-1};
  expectRefused(trncclCommShrink(comm, one, 1, nullptr, nullptr, 0), trncclInvalidArgument,
                "newcomm is NULL");
  expectRefused(trncclCommShrink(nullptr, one, 1, &out, nullptr, 0), trncclInvalidArgument,
                "comm is NULL");
  expectRefused(trncclCommShrink(comm, one, 1, &out, nullptr, 2), trncclInvalidArgument,
                "shrinkFlags 2");
  expectRefused(trncclCommShrink(comm, one, -1, &out, nullptr, 0), trncclInvalidArgument,
                "excludeRanksCount -1");
  expectRefused(trncclCommShrink(comm, nullptr, 1, &out, nullptr, 0), trncclInvalidArgument,
                "excludeRanksList is NULL");
  expectRefused(trncclCommShrink(comm, far, 1, &out, nullptr, 0), trncclInvalidArgument,
                "excluded rank 3 not in [0, 3)");
  expectRefused(trncclCommShrink(comm, negative, 1, &out, nullptr, 0), trncclInvalidArgument,
                "excluded rank -1");
  expectRefused(trncclCommShrink(comm, twice, 2, &out, nullptr, 0), trncclInvalidArgument,
                "excluded twice");
  expectRefused(trncclCommShrink(comm, self, 1, &out, nullptr, TRNCCL_SHRINK_ABORT),
                trncclInvalidArgument, "its own excludeRanksList");
  trncclConfig_t config = {};  // not from TRNCCL_CONFIG_INITIALIZER
  expectRefused(trncclCommShrink(comm, one, 1, &out, &config, 0), trncclInvalidArgument,
                "TRNCCL_CONFIG_INITIALIZER");
  EXPECT_EQ(out, nullptr);
  expectRefused(trncclCommRevoke(comm, 1), trncclInvalidArgument, "revokeFlags 1");
  expectRefused(trncclCommRevoke(nullptr, 0), trncclInvalidArgument, "comm is NULL");
  int failed[3], count = -1;
  expectRefused(trncclCommGetFailedRanks(comm, failed, nullptr), trncclInvalidArgument,
                "failedCount is NULL");
  expectRefused(trncclCommGetFailedRanks(nullptr, failed, &count), trncclInvalidArgument,
                "comm is NULL");
  EXPECT_EQ(count, 0);
  // None of it was an abort (TRNCCL_SHRINK_ABORT with a bad list included): all 3 ranks go on.
  c.run([&](int r) {
    EXPECT_EQ(sumOver(c.comm(r), r + 1), 6);
    int n = -1;
    ASSERT_EQ(trncclCommGetFailedRanks(c.comm(r), nullptr, &n), trncclSuccess) << lastError();
    EXPECT_EQ(n, 0);
  });
}

// NCCL's first use: leave out ranks that are alive (and do not call it). The parent, shrunk
// with TRNCCL_SHRINK_DEFAULT, stays usable by all its ranks.
TEST(Shrink, DefaultLeavesOutLiveRanksAndKeepsTheParent) {
  Comms c(4);
  std::vector<trncclComm_t> sub(4, nullptr);
  int excluded[] = {2, 0};  // any order; rank 1 leads (the first rank not excluded)
  c.run([&](int r) {
    if (r == 0 || r == 2) return;
    ASSERT_EQ(trncclCommShrink(c.comm(r), excluded, 2, &sub[r], nullptr, TRNCCL_SHRINK_DEFAULT),
              trncclSuccess)
        << lastError();
    int count = 0, rank = -1;
    ASSERT_EQ(trncclCommCount(sub[r], &count), trncclSuccess);
    ASSERT_EQ(trncclCommUserRank(sub[r], &rank), trncclSuccess);
    EXPECT_EQ(count, 2);
    EXPECT_EQ(rank, r == 1 ? 0 : 1);
    EXPECT_EQ(sumOver(sub[r], r + 1), 2 + 4);
  });
  c.run([&](int r) { EXPECT_EQ(sumOver(c.comm(r), r + 1), 10); });
  for (trncclComm_t s : sub) EXPECT_EQ(trncclCommDestroy(s), trncclSuccess);
}

// Every caller must exclude the same ranks; when they disagree, every one of them is told so
// at once (not at the deadline) and nothing is built.
TEST(Shrink, RanksThatDisagreeOnTheListAllFailAtOnce) {
  Comms c(3);
  std::vector<trncclComm_t> sub(3, nullptr);
  std::vector<std::string> errors(3);
  std::vector<double> seconds(3);
  int excludeOne[] = {1};
  c.run([&](int r) {
    auto start = Clock::now();
    trncclResult_t got = r == 2 ? trncclCommShrink(c.comm(r), excludeOne, 1, &sub[r], nullptr, 0)
                                : trncclCommShrink(c.comm(r), nullptr, 0, &sub[r], nullptr, 0);
    seconds[r] = secondsSince(start);
    EXPECT_EQ(got, trncclInvalidUsage) << "rank " << r << ": " << lastError();
    errors[r] = lastError();
    EXPECT_EQ(sub[r], nullptr);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(errors[r].find("disagree on excludeRanksList: rank 2 excludes [1]"),
              std::string::npos)
        << "rank " << r << ": " << errors[r];
    EXPECT_LT(seconds[r], 20.0) << "rank " << r << " waited for its deadline";
  }
  c.run([&](int r) { EXPECT_EQ(sumOver(c.comm(r), 1), 3); });  // DEFAULT: nothing revoked
}

// Revoke on one rank: its own call in flight fails and later calls are refused; a rank blocked
// in a collective and an idle rank that polls the async error learn it within seconds (T is a
// minute). The revoked communicator can still be shrunk.
TEST(Revoke, FailsPendingAndLaterCallsOnEveryRank) {
  Comms c(3);
  std::vector<trncclComm_t> sub(3, nullptr);
  Clock::time_point revokedAt;
  c.run([&](int r) {
    float x[4] = {1, 1, 1, 1};
    if (r == 0) {
      std::this_thread::sleep_for(300ms);
      revokedAt = Clock::now();
      ASSERT_EQ(trncclCommRevoke(c.comm(r), TRNCCL_REVOKE_DEFAULT), trncclSuccess) << lastError();
      EXPECT_LT(secondsSince(revokedAt), 5.0);
      expectRefused(trncclAllReduce(x, x, 4, trncclFloat, trncclSum, c.comm(r), c.stream(r)),
                    trncclInvalidUsage, "revoked");
      EXPECT_EQ(trncclCommRevoke(c.comm(r), 0), trncclSuccess);  // idempotent
    } else if (r == 1) {  // blocked: nobody else joins this all-reduce
      ASSERT_EQ(trncclAllReduce(x, x, 4, trncclFloat, trncclSum, c.comm(r), c.stream(r)),
                trncclSuccess);
      EXPECT_NE(trnrtStreamSynchronize(c.stream(r)), trnrtSuccess);
      EXPECT_LT(secondsSince(revokedAt), 10.0) << "the blocked rank waited for its deadline";
    } else {  // idle: polls
      trncclResult_t async = trncclSuccess;
      auto start = Clock::now();
      while (async == trncclSuccess && secondsSince(start) < 20.0) {
        ASSERT_EQ(trncclCommGetAsyncError(c.comm(r), &async), trncclSuccess);
        std::this_thread::sleep_for(10ms);
      }
      EXPECT_EQ(async, trncclRemoteError);
      EXPECT_LT(secondsSince(revokedAt), 10.0);
      std::string message = trncclGetLastError(c.comm(r));
      EXPECT_NE(message.find("rank 0 revoked the communicator"), std::string::npos) << message;
    }
    trncclResult_t async = trncclSuccess;
    ASSERT_EQ(trncclCommGetAsyncError(c.comm(r), &async), trncclSuccess);
    EXPECT_NE(async, trncclSuccess) << "rank " << r;
    ASSERT_EQ(trncclCommShrink(c.comm(r), nullptr, 0, &sub[r], nullptr, TRNCCL_SHRINK_DEFAULT),
              trncclSuccess)
        << "rank " << r << ": " << lastError();
    EXPECT_EQ(sumOver(sub[r], r), 0 + 1 + 2);
  });
  for (trncclComm_t s : sub) EXPECT_EQ(trncclCommDestroy(s), trncclSuccess);
}

// Rank 3 goes away. A shrink that leaves it in fails fast on every survivor, naming it; the
// failed-rank query finds it, and the shrink without it works. The parent, shrunk with
// TRNCCL_SHRINK_ABORT, then refuses work and keeps reporting its error.
TEST(FailedRanks, AGoneRankIsFoundAndLeftOut) {
  Comms c(4);
  ASSERT_EQ(trncclCommDestroy(c.comm(3)), trncclSuccess);
  c.comm(3) = nullptr;
  std::vector<trncclComm_t> sub(3, nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      trnrtSetDevice(r);
      auto start = Clock::now();
      trncclComm_t none = nullptr;
      expectRefused(trncclCommShrink(c.comm(r), nullptr, 0, &none, nullptr, 0), trncclRemoteError,
                    "rank 3 is not in excludeRanksList but is gone");
      EXPECT_LT(secondsSince(start), 20.0) << "rank " << r << " waited for its deadline";
      int failed[4] = {-1, -1, -1, -1}, count = 0;
      ASSERT_EQ(trncclCommGetFailedRanks(c.comm(r), failed, &count), trncclSuccess);
      ASSERT_EQ(count, 1) << "rank " << r;
      EXPECT_EQ(failed[0], 3);
      ASSERT_EQ(trncclCommShrink(c.comm(r), failed, count, &sub[r], nullptr, TRNCCL_SHRINK_ABORT),
                trncclSuccess)
          << lastError();
      EXPECT_EQ(sumOver(sub[r], r + 1), 1 + 2 + 3);
      float x = 1;
      for (int i = 0; i < 3; ++i) {  // the parent keeps refusing, and keeps its error
        expectRefused(trncclAllReduce(&x, &x, 1, trncclFloat, trncclSum, c.comm(r), nullptr),
                      trncclInvalidUsage, "revoked");
        trncclResult_t async = trncclSuccess;
        ASSERT_EQ(trncclCommGetAsyncError(c.comm(r), &async), trncclSuccess);
        EXPECT_EQ(async, trncclRemoteError);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (trncclComm_t s : sub) EXPECT_EQ(trncclCommDestroy(s), trncclSuccess);
}

// The first rank not excluded leads a shrink; when it is gone, the others say so at once.
TEST(Shrink, AGoneLeaderFailsTheOthersFast) {
  Comms c(3);
  ASSERT_EQ(trncclCommDestroy(c.comm(0)), trncclSuccess);
  c.comm(0) = nullptr;
  std::vector<std::thread> threads;
  for (int r = 1; r < 3; ++r) {
    threads.emplace_back([&, r] {
      trnrtSetDevice(r);
      auto start = Clock::now();
      trncclComm_t none = nullptr;
      expectRefused(trncclCommShrink(c.comm(r), nullptr, 0, &none, nullptr, TRNCCL_SHRINK_ABORT),
                    trncclRemoteError, "rank 0 leads the shrink");
      EXPECT_LT(secondsSince(start), 20.0);
      EXPECT_EQ(none, nullptr);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace trnccl::testing
