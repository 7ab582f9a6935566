// Recovery on real processes (issue 18; reliability anchor F7): kill -9 one rank of 4 in the
// middle of an all-reduce loop; the 3 survivors learn which rank failed
// (trncclCommGetFailedRanks), shrink the communicator without it (TRNCCL_SHRINK_ABORT) and get
// correct sums on the new one, while the old one keeps refusing work. Nothing leaks: every
// survivor's descriptors and threads return to their count before init, no segment of either
// communicator stays mapped or named in /dev/shm. Ranks run fault_rank.cc's mode "shrink".
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "fault/launcher.h"
#include "fault/proc_stats.h"
#include "fault/scenario.h"

namespace trnccl::fault {
namespace {

using namespace std::chrono_literals;

constexpr int kSuccess = 0;

void shrinkAfterKill(int victim) {
  constexpr int kTimeoutMs = 20000;  // every bound below is far under it: nothing waits for T
  int port = freePort();
  Job job("shrink", 4, {"count=262144", "iters2=20"},
          {{"TRNCCL_TIMEOUT_MS", std::to_string(kTimeoutMs)}}, port);
  job.startAll();
  waitAllIterating(job, 60s);
  if (::testing::Test::HasFatalFailure()) return;
  long long killed = nowMs();
  job.signal(victim, SIGKILL);
  std::vector<int> survivors;
  float want = 0;
  for (int r = 0; r < 4; ++r) {
    if (r == victim) continue;
    survivors.push_back(r);
    want += static_cast<float>(r + 1);
  }
  std::vector<std::string> mapped;
  for (size_t i = 0; i < survivors.size(); ++i) {
    int r = survivors[i];
    auto error = job.waitLine(r, "ERROR ", 15s);
    ASSERT_TRUE(error) << "survivor " << r << " did not fail:\n" << job.output(r);
    ErrorLine e = parseError(*error);
    EXPECT_EQ(e.async, kRemoteError) << "rank " << r << ": " << e.message;
    auto failed = job.waitLine(r, "FAILED", 10s);
    ASSERT_TRUE(failed) << job.output(r);
    EXPECT_EQ(*failed, " " + std::to_string(victim)) << "rank " << r;
    auto shrunk = job.waitLine(r, "SHRUNK ", 30s);
    ASSERT_TRUE(shrunk) << "survivor " << r << " did not shrink:\n" << job.output(r);
    int newRank = -1, newCount = 0;
    long long ms = 0;
    std::istringstream(*shrunk) >> newRank >> newCount >> ms;
    EXPECT_EQ(newRank, static_cast<int>(i)) << "ranks keep their order";
    EXPECT_EQ(newCount, 3);
    std::printf("rank %d: error %lld ms after the kill, new rank %d after a %lld ms shrink\n", r,
                e.t - killed, newRank, ms);
    auto done = job.waitLine(r, "DONE", 30s);
    ASSERT_TRUE(done) << "survivor " << r << " did not finish:\n" << job.output(r);
    std::vector<std::string> sums = job.lines(r, "SUM ");
    ASSERT_EQ(sums.size(), 20u) << job.output(r);
    for (const std::string& s : sums) {
      std::istringstream in(s);
      int iter = -1;
      float got = 0;
      in >> iter >> got;
      ASSERT_FALSE(in.fail()) << "rank " << r << ": SUM " << s;
      EXPECT_EQ(got, want) << "rank " << r << " iteration " << iter;
    }
    std::vector<std::string> old = job.lines(r, "OLDCOMM ");
    ASSERT_EQ(old.size(), 3u);
    for (const std::string& o : old) {
      int call = -1, async = -1;
      std::istringstream(o) >> call >> async;
      EXPECT_EQ(call, kInvalidUsage) << "the old communicator took work after the shrink";
      EXPECT_NE(async, kSuccess) << "the old communicator forgot its error";
    }
    auto counts = job.waitLine(r, "COUNTS ", 1s);
    ASSERT_TRUE(counts);
    int fdsBefore, threadsBefore, fdsAfter, threadsAfter;
    std::istringstream(*counts) >> fdsBefore >> threadsBefore >> fdsAfter >> threadsAfter;
    EXPECT_EQ(fdsAfter, fdsBefore) << "rank " << r << ": descriptors leaked";
    EXPECT_EQ(threadsAfter, threadsBefore) << "rank " << r << ": threads left";
    EXPECT_EQ(job.waitLine(r, "MAPPED_AFTER ", 1s).value_or("?"), "0") << "rank " << r;
    for (const std::string& m : job.lines(r, "MAPPED ")) mapped.push_back(m);
  }
  for (int r : survivors) {
    auto status = job.waitExit(r, 10s);
    ASSERT_TRUE(status) << "rank " << r << " did not exit";
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << job.output(r);
  }
  ASSERT_TRUE(job.waitExit(victim, 5s));
  EXPECT_EQ(shmEntries(shmPrefix(port)), 0) << "the old communicator left segments";
  for (const std::string& name : mapped) {
    EXPECT_EQ(shmEntries(name), 0) << "the shrunk communicator left /dev/shm/" << name;
  }
}

TEST(Fault, ShrinkAfterKill) { shrinkAfterKill(2); }

// Rank 0 hosted the bootstrap root and would have led the shrink: rank 1 leads instead.
TEST(Fault, ShrinkAfterKillOfRank0) { shrinkAfterKill(0); }

}  // namespace
}  // namespace trnccl::fault
