// Reliability anchor K1: a soak with random faults. Jobs of 4-8 ranks (fault_rank.cc, mode
// random) run random collectives, dtypes, sizes, roots, algorithms and transports, checking
// every result against its reference; every TRNCCL_SOAK_FAULT_EVERY_S (30 s) the test injects
// a random fault from {kill -9, SIGSTOP, TCP reset (`ss -K`), junk on the job's ports, kill -9
// recovered by shrink}, checks that no rank hangs (each one errors or keeps completing calls
// within T + 2 s) and recovers: after a kill -9 + shrink the survivors shrink the failed rank
// out (trncclCommGetFailedRanks, trncclCommShrink) and go on with checked random calls on the
// new communicator; after the others, with a fresh communicator (a new job). The first fault of
// a run is always the shrink (so the 2 minutes of CI shrink once). Until TRNCCL_SOAK_SECONDS
// (120) have passed. The test
// is the ranks' external watchdog; CTest's TIMEOUT and `timeout` are the test's.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fault/launcher.h"
#include "fault/proc_stats.h"
#include "fault/scenario.h"
#include "fault/sockets.h"

namespace trnccl::fault {
namespace {

using namespace std::chrono_literals;

constexpr int kTimeoutMs = 8000;  // T of the soak's jobs
enum Fault { kKill, kStop, kReset, kJunk, kKillShrink, kFaults };
const char* const kFaultNames[] = {"kill -9", "SIGSTOP", "TCP reset", "junk", "kill -9 + shrink"};

long envLong(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atol(v) : fallback;
}

std::string tail(Job& job, int r) {
  std::vector<std::string> all = job.lines(r, "");
  std::string s;
  for (size_t i = all.size() > 12 ? all.size() - 12 : 0; i < all.size(); ++i) {
    s += "  " + all[i] + "\n";
  }
  return s;
}

struct Tally {
  int epochs = 0;
  long calls = 0;
  int faults[kFaults] = {};
  long long worstDetectMs = 0;
  long worstRssGrowthKb = 0;
};

long lastIter(Job& job, int r) {
  std::vector<std::string> it = job.lines(r, "ITER ");
  return it.empty() ? -1 : std::stol(it.back());
}

void expectNoWrongResult(Job& job) {
  for (int r = 0; r < job.nranks(); ++r) {
    ASSERT_TRUE(job.lines(r, "WRONG ").empty()) << "rank " << r << " got a wrong result:\n"
                                                << tail(job, r);
  }
}

// Until `until`: every rank keeps completing calls (no gap over T + 2 s), errorless and right.
void runHealthy(Job& job, long long until) {
  std::vector<long> last(static_cast<size_t>(job.nranks()), -2);
  std::vector<long long> progressed(last.size(), nowMs());
  while (nowMs() < until) {
    if (!job.waitLine(0, "\x01", 200ms)) std::this_thread::sleep_for(10ms);
    expectNoWrongResult(job);
    if (::testing::Test::HasFatalFailure()) return;
    for (int r = 0; r < job.nranks(); ++r) {
      ASSERT_TRUE(job.lines(r, "ERROR ").empty()) << "rank " << r << " failed with no fault:\n"
                                                  << tail(job, r);
      long it = lastIter(job, r);
      size_t i = static_cast<size_t>(r);
      if (it != last[i]) {
        last[i] = it;
        progressed[i] = nowMs();
      }
      ASSERT_LT(nowMs() - progressed[i], kTimeoutMs + 2000)
          << "rank " << r << " completed no call for T + 2 s and reported nothing (a hang)\n"
          << tail(job, r);
    }
  }
}

// Junk: 64 KiB of random bytes and an HTTP request to every port the victim listens on.
void sendJunk(Job& job, int victim, std::mt19937_64& rng) {
  std::string bytes(64 << 10, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  for (const TcpEntry& e : tcpOf(job.pid(victim), kTcpListen)) {
    for (const std::string& junk : {bytes, std::string("GET /metrics HTTP/1.0\r\n\r\n")}) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(e.localPort);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
        ssize_t n = ::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)n;
      }
      ::close(fd);
    }
  }
}

// Resets one of the victim's established TCP connections (bootstrap or transport) with
// `ss -K`; false if it has none or the kernel cannot destroy sockets.
bool resetConnection(Job& job, int victim, std::mt19937_64& rng) {
  std::vector<TcpEntry> conns = tcpOf(job.pid(victim), kTcpEstablished);
  if (conns.empty()) return false;
  const TcpEntry& c = conns[rng() % conns.size()];
  std::string cmd = "ss -K sport = :" + std::to_string(c.localPort) +
                    " dport = :" + std::to_string(c.remotePort) + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return false;
  for (const TcpEntry& e : tcpTable()) {
    if (e.inode == c.inode && e.state == kTcpEstablished) return false;
  }
  std::printf("  reset %u -> %u\n", c.localPort, c.remotePort);
  return true;
}

// After a kill, a stop or a reset every rank still running must report an error: survivors of
// a kill or stop within T + 2 s of the fault, the ranks of a reset within T + 2 s of the first
// error (ranks waiting on one that failed time out). A reset of a connection the job does not
// use now changes nothing: then every rank must keep going.
bool expectErrors(Job& job, Fault f, int victim, long long at, Tally& tally) {
  long long deadline = at + kTimeoutMs + 2000;
  if (f == kReset) {
    long long first = 0;
    for (int r = 0; r < job.nranks(); ++r) {
      auto line = job.waitLine(r, "ERROR ", std::chrono::milliseconds(deadline - nowMs()));
      if (line) first = first == 0 ? parseError(*line).t : std::min(first, parseError(*line).t);
    }
    if (first == 0) return false;
    deadline = first + kTimeoutMs + 2000;
  }
  for (int r = 0; r < job.nranks(); ++r) {
    if (r == victim && f != kReset) continue;
    auto line =
        job.waitLine(r, "ERROR ", std::chrono::milliseconds(std::max(0LL, deadline - nowMs())));
    EXPECT_TRUE(line) << "rank " << r << " neither failed nor finished within T + 2 s after the "
                      << kFaultNames[f] << " of rank " << victim << " (a hang)\n"
                      << tail(job, r);
    if (line) tally.worstDetectMs = std::max(tally.worstDetectMs, parseError(*line).t - at);
  }
  return true;
}

// Ends the job: held ranks abort, healthy ones stop together; all exit, leaving nothing in
// /dev/shm, and their descriptors and threads were flat while they ran (up to the fault, when
// it broke the job: the root then drops the dead rank's connection, which is no leak).
void finish(Job& job, Fault f, int victim, bool broken, const std::vector<size_t>& before,
            Tally& tally) {
  if (broken && f == kStop) job.signal(victim, SIGKILL);
  for (int r = 0; r < job.nranks(); ++r) job.closeStdin(r);
  for (int r = 0; r < job.nranks(); ++r) {
    auto status = job.waitExit(r, 15s);
    ASSERT_TRUE(status) << "rank " << r << " did not exit within 15 s\n" << tail(job, r);
    if (broken && r == victim && f != kReset) continue;
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "rank " << r << " status " << *status << "\n"
        << tail(job, r);
    // A job that shrank goes on to the end; other broken ones abort.
    EXPECT_FALSE(job.lines(r, broken && f != kKillShrink ? "ABORT_MS" : "DONE").empty())
        << tail(job, r);
    std::vector<std::string> stats = job.lines(r, "STATS ");
    if (broken) stats.resize(std::min(stats.size(), before[static_cast<size_t>(r)]));
    if (stats.size() >= 3) {  // the first sample precedes the biggest buffers' first use
      long s1, f1, t1, m1, s2, f2, t2, m2;
      std::sscanf(stats[1].c_str(), "%ld %ld %ld %ld", &s1, &f1, &t1, &m1);
      std::sscanf(stats.back().c_str(), "%ld %ld %ld %ld", &s2, &f2, &t2, &m2);
      // A leak grows the count. It may drop after the warm-up sample: once in CI (rank 0, the
      // bootstrap root, 30 -> 25 in a 6-rank shm job after junk; not reproduced with its seed).
      EXPECT_LE(f2, f1) << "rank " << r << " descriptors grew from call " << s1 << " to " << s2;
      if (f2 < f1) std::printf("  rank %d: descriptors %ld -> %ld\n", r, f1, f2);
      EXPECT_EQ(t1, t2) << "rank " << r << " threads grew from call " << s1 << " to " << s2;
      // Warm-up (malloc arenas of the executor's and transports' threads, first use of the
      // largest calls) took up to 5.6 MiB in an 8-rank job; a leak of > 16 KiB per call shows.
      EXPECT_LT(m2 - m1, 16384) << "rank " << r << " RSS grew from call " << s1 << " to " << s2;
      tally.worstRssGrowthKb = std::max(tally.worstRssGrowthKb, m2 - m1);
    }
  }
  EXPECT_EQ(shmEntries(shmPrefix(job.port())), 0) << "the job left segments in /dev/shm";
}

// After a kill -9 + shrink: every survivor shrank the victim out (SHRUNK <rank> <n - 1>
// <victim>) and completes 10 more checked calls on the new communicator.
void expectShrunk(Job& job, int victim) {
  const std::string want = " " + std::to_string(job.nranks() - 1) + " " + std::to_string(victim);
  for (int r = 0; r < job.nranks(); ++r) {
    if (r == victim) continue;
    auto line = job.waitLine(r, "SHRUNK ", 20s);
    ASSERT_TRUE(line) << "rank " << r << " did not shrink within 20 s\n" << tail(job, r);
    EXPECT_EQ(line->substr(line->find(' ')), want) << "rank " << r << ": SHRUNK " << *line;
    const size_t iters = job.lines(r, "ITER ").size();
    const long long until = nowMs() + kTimeoutMs + 2000;
    while (job.lines(r, "ITER ").size() < iters + 10 && nowMs() < until) {
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_GE(job.lines(r, "ITER ").size(), iters + 10)
        << "rank " << r << " completed too few calls after the shrink\n"
        << tail(job, r);
    EXPECT_EQ(job.lines(r, "ERROR ").size(), 1u) << "rank " << r << " failed again\n"
                                                 << tail(job, r);
  }
  expectNoWrongResult(job);
}

void runEpoch(std::mt19937_64& rng, long long faultAt, bool inject, Tally& tally) {
  static const char* const algos[] = {"", "allreduce:ring", "allreduce:mesh", "allreduce:rdh",
                                      "allgather:mesh;reducescatter:mesh"};
  int n = 4 + static_cast<int>(rng() % 5);
  std::string transport = rng() % 2 == 0 ? "shm" : "tcp";
  std::string algo = algos[rng() % 5];
  Fault f = !inject ? kJunk : tally.epochs == 0 ? kKillShrink : static_cast<Fault>(rng() % kFaults);
  std::vector<std::string> args = {"seed=" + std::to_string(rng() % 100000), "watchdog=3600"};
  if (f == kKillShrink) args.push_back("shrink=1");
  Job job("random", n, args,
          {{"TRNCCL_TIMEOUT_MS", std::to_string(kTimeoutMs)},
           {"TRNCCL_TRANSPORT", transport},
           {"TRNCCL_ALGO", algo}});
  job.startAll();
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(job.waitLine(r, "READY", 60s)) << "rank " << r << " of a fresh job never "
                                               << "finished init\n"
                                               << tail(job, r);
  }
  runHealthy(job, faultAt);
  if (::testing::Test::HasFatalFailure()) return;
  int victim = static_cast<int>(rng() % static_cast<uint64_t>(n));
  std::vector<size_t> statsBefore;
  for (int r = 0; r < n; ++r) statsBefore.push_back(job.lines(r, "STATS ").size());
  long long at = nowMs();
  if (f == kReset && !resetConnection(job, victim, rng)) {
    std::printf("  no TCP connection of rank %d could be reset (ss -K): kill -9 instead\n", victim);
    f = kKill;
  }
  std::printf("epoch %d: %d ranks, %s, TRNCCL_ALGO='%s': %s rank %d after %ld calls\n",
              tally.epochs, n, transport.c_str(), algo.c_str(),
              inject ? kFaultNames[f] : "(end, no fault)", victim, lastIter(job, 0) + 1);
  if (f == kKill || f == kKillShrink) job.signal(victim, SIGKILL);
  if (f == kStop) job.signal(victim, SIGSTOP);
  if (inject && f == kJunk) sendJunk(job, victim, rng);
  bool broken = f != kJunk && expectErrors(job, f, victim, at, tally);
  if (broken && f == kKillShrink) expectShrunk(job, victim);
  if (!broken) runHealthy(job, nowMs() + 3000);  // junk, or a reset nobody noticed
  expectNoWrongResult(job);
  tally.calls += static_cast<long>(job.lines(0, "ITER ").size());
  if (inject) ++tally.faults[f];
  ++tally.epochs;
  finish(job, f, victim, broken, statsBefore, tally);
}

TEST(Soak, RandomFaults) {
  const long seconds = envLong("TRNCCL_SOAK_SECONDS", 120);
  const long everyMs = envLong("TRNCCL_SOAK_FAULT_EVERY_S", 30) * 1000;
  const uint64_t seed = static_cast<uint64_t>(envLong("TRNCCL_SOAK_SEED", nowMs()));
  std::printf("soak: %ld s, a fault every %ld s, T = %d ms, TRNCCL_SOAK_SEED=%llu\n", seconds,
              everyMs / 1000, kTimeoutMs, static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a long run's log is read while it runs
  const int fdsBefore = openFds();
  const long long start = nowMs(), end = start + seconds * 1000;
  Tally tally;
  while (nowMs() < end && !::testing::Test::HasFailure()) {
    long long faultAt = std::min(nowMs() + everyMs, end);
    runEpoch(rng, faultAt, faultAt < end, tally);
  }
  EXPECT_EQ(openFds(), fdsBefore) << "the test's own descriptors grew";
  std::printf(
      "soak: %.0f s, %d jobs, %ld calls checked (rank 0), faults: %d kill -9, %d SIGSTOP, "
      "%d TCP reset, %d junk, %d kill -9 + shrink; slowest error after a fault %lld ms; largest "
      "RSS growth of a rank %ld KiB; wrong results: %s\n",
      static_cast<double>(nowMs() - start) / 1000.0, tally.epochs, tally.calls, tally.faults[kKill],
      tally.faults[kStop], tally.faults[kReset], tally.faults[kJunk], tally.faults[kKillShrink],
      tally.worstDetectMs, tally.worstRssGrowthKb,
      ::testing::Test::HasFailure() ? "see above" : "0");
}

// A reset of a rank's bootstrap connection while the job runs small shm collectives (which
// never wait long enough for the executor's idle health check): the root fails the
// communicator, and every rank reports it within 3 s, long before the calls' timeout (60 s).
TEST(Fault, BootstrapResetFailsEveryRank) {
  Job job("random", 4, {"seed=7", "watchdog=120"},
          {{"TRNCCL_TIMEOUT_MS", "60000"}, {"TRNCCL_TRANSPORT", "shm"}});
  job.startAll();
  for (int r = 0; r < job.nranks(); ++r) {
    ASSERT_TRUE(job.waitLine(r, "ITER ", 60s)) << "rank " << r << " never ran a call\n"
                                               << tail(job, r);
  }
  std::vector<TcpEntry> conns = tcpOf(job.pid(2), kTcpEstablished);
  ASSERT_EQ(conns.size(), 1u) << "rank 2 should hold only its bootstrap connection";
  std::mt19937_64 rng(1);
  ASSERT_TRUE(resetConnection(job, 2, rng)) << "ss -K could not reset rank 2's connection";
  const long long at = nowMs();
  for (int r = 0; r < job.nranks(); ++r) {
    auto line =
        job.waitLine(r, "ERROR ", std::chrono::milliseconds(std::max(0LL, at + 3000 - nowMs())));
    ASSERT_TRUE(line) << "rank " << r << " kept running after the root failed the communicator\n"
                      << tail(job, r);
    EXPECT_NE(line->find("bootstrap"), std::string::npos) << *line;
  }
  for (int r = 0; r < job.nranks(); ++r) job.closeStdin(r);
  for (int r = 0; r < job.nranks(); ++r) ASSERT_TRUE(job.waitExit(r, 15s)) << tail(job, r);
  expectNoWrongResult(job);
}

}  // namespace
}  // namespace trnccl::fault
