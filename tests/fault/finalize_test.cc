// Reliability anchor C3: a rank that is done early. One finalizes and exits right after a send
// whose receiver posts late: the data must still arrive whole. One skips a collective while
// alive: its peers must time out (not before T/2, not after T + 2 s) rather than hang.
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "fault/launcher.h"
#include "fault/scenario.h"

namespace trnccl::fault {
namespace {

using namespace std::chrono_literals;

// `count` floats: within one FIFO (the sender's stream is done before the receiver posts) or
// several times its size (the sender waits for the receiver to drain it).
void finalizeAfterSend(const std::string& transport, long count) {
  Job job("finalize", 2, {"count=" + std::to_string(count), "delay_ms=1000"},
          {{"TRNCCL_TRANSPORT", transport}, {"TRNCCL_TIMEOUT_MS", "20000"}});
  job.startAll();
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(job.waitLine(r, "DONE", 30s))
        << transport << ", " << count << " floats, rank " << r << ":\n"
        << job.output(r);
    auto status = job.waitExit(r, 10s);
    ASSERT_TRUE(status) << "rank " << r << " did not exit";
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << job.output(r);
  }
}

TEST(Fault, FinalizeAfterSendDeliversShm) {
  finalizeAfterSend("shm", 1024);
  finalizeAfterSend("shm", 1 << 20);
}

TEST(Fault, FinalizeAfterSendDeliversTcp) {
#if TRNCCL_HAVE_TCP
  finalizeAfterSend("tcp", 1024);
  finalizeAfterSend("tcp", 1 << 20);
#else
  skipTest("transports/tcp is not in this build (no trnccl_tcp target)");
#endif
}

TEST(Fault, SkippedCollectiveTimesOut) {
  constexpr int kTimeoutMs = 4000;
  Job job("mismatch", 4, {"bad=2", "field=skip"},
          {{"TRNCCL_TIMEOUT_MS", std::to_string(kTimeoutMs)}});
  job.startAll();
  std::vector<int> others = {0, 1, 3};
  for (int r : others) {
    auto line = job.waitLine(r, "ERROR ", std::chrono::milliseconds(kTimeoutMs + 5000));
    ASSERT_TRUE(line) << "rank " << r << " hung:\n" << job.output(r);
    ErrorLine e = parseError(*line);
    EXPECT_EQ(e.async, kTimeout) << "rank " << r << ": " << e.message;
    EXPECT_GE(e.since, kTimeoutMs / 2) << "rank " << r << " timed out early: " << e.message;
    EXPECT_LE(e.since, kTimeoutMs + 2000) << "rank " << r << " timed out late: " << e.message;
    std::printf("rank %d after %lld ms: %s\n", r, e.since, e.message.c_str());
  }
  releaseAndCheckAbort(job, others);
  job.closeStdin(2);
  EXPECT_TRUE(job.waitExit(2, 10s)) << "the skipping rank did not exit";
}

}  // namespace
}  // namespace trnccl::fault
