// Fault tests on real processes (issue 7; reliability anchors F1-F3, F5, F6, C1, C2): ranks killed,
// stopped, aborted from another thread, or disagreeing about a collective. Each TEST is one CTest
// entry (tests/fault/CMakeLists.txt) under a CTest TIMEOUT and an outer `timeout`; ranks are
// started by launcher.h. What a job leaves and withstands is in resource_test.cc.
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "fault/launcher.h"
#include "fault/scenario.h"

namespace trnccl::fault {
namespace {

using namespace std::chrono_literals;

// F1/F2/F6: kill -9 one of 4 ranks in a 64 MiB all-reduce loop. The survivors must fail with
// trncclRemoteError long before TRNCCL_TIMEOUT_MS (peer death is detected: pidfd on shm, the
// socket on tcp, and the bootstrap root relays it to ranks that do not talk to the victim),
// then abort promptly.
void killOneRank(const std::string& transport, int victim) {
  constexpr int kTimeoutMs = 10000;
  Job job("loop", 4, {"count=16777216", "per_sync=2"},
          {{"TRNCCL_TIMEOUT_MS", std::to_string(kTimeoutMs)}, {"TRNCCL_TRANSPORT", transport}});
  job.startAll();
  waitAllIterating(job, 60s);
  if (::testing::Test::HasFatalFailure()) return;
  long long killed = nowMs();
  job.signal(victim, SIGKILL);
  std::vector<int> survivors;
  for (int r = 0; r < 4; ++r) {
    if (r == victim) continue;
    survivors.push_back(r);
    auto line = job.waitLine(r, "ERROR ", std::chrono::milliseconds(kTimeoutMs + 2000));
    ASSERT_TRUE(line) << "survivor " << r << " did not report an error within T+2s:\n"
                      << job.output(r);
    ErrorLine e = parseError(*line);
    EXPECT_NE(e.sync, 0);
    EXPECT_EQ(e.async, kRemoteError) << "rank " << r << ": " << e.message;
    EXPECT_LT(e.t - killed, 3000) << "rank " << r << " needed " << e.t - killed
                                  << " ms to notice: " << e.message;
    std::printf("rank %d: error %lld ms after the kill: %s\n", r, e.t - killed, e.message.c_str());
  }
  auto status = job.waitExit(victim, 5s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL);
  releaseAndCheckAbort(job, survivors);
}

TEST(Fault, KillOneOfFourShm) { killOneRank("shm", 2); }

TEST(Fault, KillRootRankShm) { killOneRank("shm", 0); }

TEST(Fault, KillOneOfFourTcp) {
#if TRNCCL_HAVE_TCP
  killOneRank("tcp", 2);
#else
  skipTest("transports/tcp is not in this build (no trnccl_tcp target)");
#endif
}

// F3: SIGSTOP one rank (alive, silent): survivors get trncclTimeout, not before T/2 after the
// stop and not much after T; then the stopped rank is killed.
TEST(Fault, SigstopGivesTimeout) {
  constexpr int kTimeoutMs = 4000;
  Job job("loop", 4, {"count=65536", "per_sync=1"},
          {{"TRNCCL_TIMEOUT_MS", std::to_string(kTimeoutMs)}});
  job.startAll();
  waitAllIterating(job, 30s);
  if (::testing::Test::HasFatalFailure()) return;
  const int victim = 3;
  long long stopped = nowMs();
  job.signal(victim, SIGSTOP);
  std::vector<int> survivors = {0, 1, 2};
  for (int r : survivors) {
    auto line = job.waitLine(r, "ERROR ", std::chrono::milliseconds(kTimeoutMs + 3000));
    ASSERT_TRUE(line) << "survivor " << r << " hung past T+3s:\n" << job.output(r);
    ErrorLine e = parseError(*line);
    EXPECT_EQ(e.async, kTimeout) << "rank " << r << ": " << e.message;
    EXPECT_GE(e.t - stopped, kTimeoutMs / 2) << "rank " << r << " timed out early";
    EXPECT_LE(e.t - stopped, kTimeoutMs + 2000) << "rank " << r << " timed out late";
    EXPECT_GE(e.since, kTimeoutMs - 100) << "rank " << r << ": the call's own deadline";
    std::printf("rank %d: timeout %lld ms after SIGSTOP: %s\n", r, e.t - stopped,
                e.message.c_str());
  }
  job.signal(victim, SIGKILL);
  job.signal(victim, SIGCONT);
  ASSERT_TRUE(job.waitExit(victim, 5s));
  releaseAndCheckAbort(job, survivors);
}

// A rank stuck on a shm peer still notices that its own network link failed: the executor
// checks every link of the communicator while it waits, not only the peers it waits on.
// 2 emulated hosts x 2 ranks, shm inside a host and `transport` (tcp, or ofi over libfabric's
// tcp provider) across. Rank 1 receives from rank 0 (shm), which never sends; then rank 2 (the
// other host) is stopped, so rank 1's link to it falls silent. Rank 1 must report that link's
// liveness timeout within T + 2 s; checking only the awaited peer (alive, idle) leaves it
// waiting for the collective timeout (30 s).
void ownLinkFailsWhileWaitingOnShm(const std::string& transport,
                                   std::map<std::string, std::string> env) {
  constexpr int kLivenessMs = 2000;
  env["TRNCCL_TIMEOUT_MS"] = "30000";
  env["TRNCCL_LIVENESS_TIMEOUT_MS"] = std::to_string(kLivenessMs);
  env["TRNCCL_EMU_RANKS_PER_NODE"] = "2";
  env["TRNCCL_TRANSPORT"] = "shm," + transport;
  Job job("recv_stuck", 4, {"receiver=1", "sender=0"}, env);
  job.startAll();
  for (int r = 0; r < 4; ++r) ASSERT_TRUE(job.waitLine(r, "READY", 30s)) << job.output(r);
  ASSERT_TRUE(job.waitLine(1, "WAITING", 10s)) << job.output(1);
  std::this_thread::sleep_for(200ms);  // into the executor's wait
  long long stopped = nowMs();
  job.signal(2, SIGSTOP);
  auto line = job.waitLine(1, "ERROR ", std::chrono::milliseconds(kLivenessMs + 3000));
  ASSERT_TRUE(line) << "rank 1 did not notice its own silent link within T+3s:\n" << job.output(1);
  ErrorLine e = parseError(*line);
  EXPECT_EQ(e.async, kTimeout) << e.message;
  EXPECT_NE(e.message.find(transport + ": heard nothing from rank 2"), std::string::npos)
      << e.message;
  EXPECT_GE(e.t - stopped, kLivenessMs / 2) << e.message;
  EXPECT_LE(e.t - stopped, kLivenessMs + 2000) << e.message;
  std::printf("rank 1: error %lld ms after the stop: %s\n", e.t - stopped, e.message.c_str());
  job.signal(2, SIGKILL);
  job.signal(2, SIGCONT);
  ASSERT_TRUE(job.waitExit(2, 5s));
  releaseAndCheckAbort(job, {0, 1, 3});
}

TEST(Fault, OwnLinkFailsWhileWaitingOnShm) {
#if TRNCCL_HAVE_TCP
  ownLinkFailsWhileWaitingOnShm("tcp", {});
#else
  skipTest("transports/tcp is not in this build (no trnccl_tcp target)");
#endif
}

// The same with libfabric's tcp provider across (on loopback): the ofi links are checked too,
// through their heartbeats' own endpoint (transports/ofi/heartbeat.h).
TEST(Fault, OwnLinkFailsWhileWaitingOnShmOfi) {
#if TRNCCL_HAVE_OFI
  ownLinkFailsWhileWaitingOnShm("ofi", {{"FI_PROVIDER", "tcp"}, {"FI_TCP_IFACE", "lo"}});
#else
  skipTest("transports/ofi is not in this build (no trnccl_ofi target)");
#endif
}

// F5: trncclCommAbort from another thread while the rank waits in a collective its peer never
// joins: the wait returns within 1 s, and descriptors and threads return to what they were
// before init.
void abortUnblocks(int blocked) {
  Job job("block", 2, {"blocked=" + std::to_string(blocked), "abort_after_ms=500"},
          {{"TRNCCL_TIMEOUT_MS", "20000"}});
  job.startAll();
  int other = 1 - blocked;
  ASSERT_TRUE(job.waitLine(other, "READY", 30s)) << job.output(other);
  auto unblock = job.waitLine(blocked, "UNBLOCK_MS ", 15s);
  ASSERT_TRUE(unblock) << job.output(blocked);
  EXPECT_LE(std::stol(*unblock), 1000)
      << "the blocked wait returned " << *unblock << " ms after the abort";
  auto sync = job.waitLine(blocked, "SYNC ", 1s);
  ASSERT_TRUE(sync);
  EXPECT_NE(std::stoi(*sync), 0) << "the aborted collective reported success";
  auto counts = job.waitLine(blocked, "COUNTS ", 10s);
  ASSERT_TRUE(counts) << job.output(blocked);
  int fdsBefore, threadsBefore, fdsAfter, threadsAfter;
  std::istringstream(*counts) >> fdsBefore >> threadsBefore >> fdsAfter >> threadsAfter;
  EXPECT_EQ(fdsAfter, fdsBefore) << "descriptors leaked by init + abort";
  EXPECT_EQ(threadsAfter, threadsBefore) << "threads left by init + abort";
  job.closeStdin(other);
  for (int r : {0, 1}) {
    auto status = job.waitExit(r, 10s);
    ASSERT_TRUE(status) << "rank " << r << " did not exit";
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << job.output(r);
  }
}

TEST(Fault, AbortFromAnotherThreadUnblocks) { abortUnblocks(1); }
TEST(Fault, AbortFromAnotherThreadUnblocksOnRoot) { abortUnblocks(0); }

// C1: with TRNCCL_CHECK=1, rank 2 passes a different count / datatype / root: every rank fails
// fast with the same message naming both ranks and both values.
void checkMismatch(const std::string& field, const std::string& rank0Value,
                   const std::string& rank2Value) {
  Job job("mismatch", 4, {"bad=2", "field=" + field},
          {{"TRNCCL_CHECK", "1"}, {"TRNCCL_TIMEOUT_MS", "20000"}});
  job.startAll();
  std::string first;
  for (int r = 0; r < 4; ++r) {
    auto line = job.waitLine(r, "ERROR ", 15s);
    ASSERT_TRUE(line) << "rank " << r << " did not fail:\n" << job.output(r);
    ErrorLine e = parseError(*line);
    EXPECT_EQ(e.async, kInvalidUsage) << e.message;
    EXPECT_LT(e.since, 2000) << "the check should fail at once";
    EXPECT_NE(e.message.find("TRNCCL_CHECK"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("rank 0 has " + rank0Value), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("rank 2 has " + rank2Value), std::string::npos) << e.message;
    // The same mismatch on every rank; the prefix names the rank's own call (C2: they differ).
    std::string found = e.message.substr(e.message.find("TRNCCL_CHECK"));
    if (r == 0) {
      first = found;
      std::printf("%s\n", e.message.c_str());
    }
    EXPECT_EQ(found, first) << "ranks report different mismatches";
  }
  std::vector<int> all = {0, 1, 2, 3};
  releaseAndCheckAbort(job, all);
}

TEST(Fault, CheckModeCountMismatch) { checkMismatch("count", "4096", "4095"); }
TEST(Fault, CheckModeDatatypeMismatch) { checkMismatch("type", "float", "int32"); }
TEST(Fault, CheckModeRootMismatch) { checkMismatch("root", "0", "1"); }
// C2: rank 2 calls broadcast then all-reduce, the others the reverse.
TEST(Fault, CheckModeCallOrderMismatch) { checkMismatch("order", "allreduce", "broadcast"); }

// C1 with the check off: an error or a timeout within T+2 s on every rank, never success.
TEST(Fault, CountMismatchWithoutCheckNeverSucceeds) {
  constexpr int kTimeoutMs = 4000;
  Job job("mismatch", 4, {"bad=2", "field=count"},
          {{"TRNCCL_TIMEOUT_MS", std::to_string(kTimeoutMs)}});
  job.startAll();
  for (int r = 0; r < 4; ++r) {
    auto line = job.waitLine(r, "ERROR ", std::chrono::milliseconds(kTimeoutMs + 2000 + 5000));
    ASSERT_TRUE(line) << "rank " << r << " did not fail:\n" << job.output(r);
    ErrorLine e = parseError(*line);
    EXPECT_LE(e.since, kTimeoutMs + 2000) << e.message;
    std::printf("rank %d after %lld ms: %s\n", r, e.since, e.message.c_str());
    EXPECT_TRUE(job.lines(r, "DONE").empty());
  }
  std::vector<int> all = {0, 1, 2, 3};
  releaseAndCheckAbort(job, all);
}

}  // namespace
}  // namespace trnccl::fault
