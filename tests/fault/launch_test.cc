// Fault tests of launching a job (reliability anchors F4, P1): the process hosting the bootstrap
// root killed during init, a rank killed before it checks in, the root's port taken by another
// process, and two jobs at once on OS-assigned ports. Same machinery as fault_test.cc
// (launcher.h, scenario.h); sockets.h reads the kernel's socket tables.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fault/launcher.h"
#include "fault/scenario.h"
#include "fault/sockets.h"

namespace trnccl::fault {
namespace {

using namespace std::chrono_literals;

constexpr int kInitTimeoutMs = 4000;  // T of these tests

// Waits until `n` ranks hold a connection to the root on `port` (connected and said hello).
void waitConnected(Job& job, int n) {
  long long end = nowMs() + 30000;
  while (connectionsTo(static_cast<uint16_t>(job.port())) < n && nowMs() < end) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_GE(connectionsTo(static_cast<uint16_t>(job.port())), n)
      << "ranks never connected to the root at " << job.port() << "\n"
      << job.output(0);
  std::this_thread::sleep_for(200ms);  // their hellos are on the wire
}

struct InitFailure {
  long long at = 0;  // when the test read it
  int code = 0;
  std::string message;
};

InitFailure expectInitFailure(Job& job, int rank, std::chrono::milliseconds within) {
  InitFailure f;
  auto line = job.waitLine(rank, "INITFAIL ", within);
  f.at = nowMs();
  EXPECT_TRUE(line) << "rank " << rank << " did not fail its init within " << within.count()
                    << " ms:\n"
                    << job.output(rank);
  if (!line) return f;
  f.code = std::atoi(line->c_str());
  f.message = line->substr(line->find(' ') + 1);
  std::printf("rank %d: init failed (%d): %s\n", rank, f.code, f.message.c_str());
  return f;
}

// F4: rank 0's process (which hosts the root, TRNCCL_COMM_ID) is killed while ranks 1 and 2
// wait for the rank table and rank 3 has not started: 1 and 2 fail at once, naming the root
// and its process; rank 3, started after the kill, fails within T, and nothing listens on the
// root's port any more.
TEST(Fault, InitRootKilled) {
  Job job("init", 4, {}, {{"TRNCCL_TIMEOUT_MS", std::to_string(kInitTimeoutMs)}});
  for (int r = 0; r < 3; ++r) job.start(r);
  waitConnected(job, 3);
  if (::testing::Test::HasFatalFailure()) return;
  long long killed = nowMs();
  job.signal(0, SIGKILL);
  job.start(3);
  const std::string root = "127.0.0.1:" + std::to_string(job.port());
  for (int r : {1, 2}) {
    InitFailure f = expectInitFailure(job, r, 5s);
    EXPECT_EQ(f.code, kRemoteError) << f.message;
    EXPECT_LT(f.at - killed, 2000) << "rank " << r << " noticed the root's death late";
    EXPECT_NE(f.message.find("root " + root), std::string::npos) << f.message;
    EXPECT_NE(f.message.find("rank 0 with TRNCCL_COMM_ID"), std::string::npos) << f.message;
  }
  InitFailure late = expectInitFailure(job, 3, std::chrono::milliseconds(kInitTimeoutMs + 5000));
  EXPECT_EQ(late.code, kTimeout) << late.message;
  EXPECT_LE(late.at - killed, kInitTimeoutMs + 2000) << late.message;
  EXPECT_NE(late.message.find(root), std::string::npos) << late.message;
  EXPECT_NE(late.message.find("nothing listens there"), std::string::npos) << late.message;
  EXPECT_FALSE(isListening(static_cast<uint16_t>(job.port())));
}

// F4: rank 3 is killed before it checks in. The root (in rank 0's process) gives up a little
// before the ranks' own deadline T and tells every waiting rank which rank is missing, then
// closes its listener, while rank 0's process is still alive (hold_fail).
TEST(Fault, InitRankKilledBeforeCheckIn) {
  Job job("init", 4, {"hold_init=3", "hold_fail=1"},
          {{"TRNCCL_TIMEOUT_MS", std::to_string(kInitTimeoutMs)}});
  long long started = nowMs();
  job.startAll();
  waitConnected(job, 3);
  if (::testing::Test::HasFatalFailure()) return;
  job.signal(3, SIGKILL);
  ASSERT_TRUE(job.waitExit(3, 5s));
  for (int r : {0, 1, 2}) {
    InitFailure f = expectInitFailure(job, r, std::chrono::milliseconds(kInitTimeoutMs + 5000));
    EXPECT_EQ(f.code, kTimeout) << f.message;
    EXPECT_NE(f.message.find("3 of 4 ranks checked in (missing rank 3)"), std::string::npos)
        << "rank " << r << " was not told who is missing: " << f.message;
    EXPECT_LE(f.at - started, kInitTimeoutMs + 2000) << "rank " << r << " failed late";
    EXPECT_GE(f.at - started, kInitTimeoutMs / 2) << "rank " << r << " failed early";
  }
  EXPECT_FALSE(isListening(static_cast<uint16_t>(job.port())))
      << "the root still listens after failing the init";
  auto status = job.waitExit(0, 0ms);
  EXPECT_FALSE(status) << "rank 0's process (the root's) should still be alive";
  for (int r : {0, 1, 2}) job.closeStdin(r);
  for (int r : {0, 1, 2}) EXPECT_TRUE(job.waitExit(r, 10s)) << "rank " << r << " did not exit";
}

// A TCP listener on 127.0.0.1 held by this process (another process than the ranks).
struct Squatter {
  int fd = -1;
  int port = 0;
  Squatter() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && ::listen(fd, 16) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port = ntohs(a.sin_port);
    }
  }
  ~Squatter() { ::close(fd); }
};

// P1: TRNCCL_COMM_ID names a port another process listens on. Rank 0, which must host the
// root there, fails within 1 s naming the port; rank 1, which cannot tell the squatter from a
// root, fails at T and does not hang.
TEST(Fault, CommIdPortTakenFailsFast) {
  Squatter squatter;
  ASSERT_GT(squatter.port, 0);
  const int timeoutMs = 3000;
  Job job("init", 2, {}, {{"TRNCCL_TIMEOUT_MS", std::to_string(timeoutMs)}}, squatter.port);
  long long started = nowMs();
  job.startAll();
  InitFailure f = expectInitFailure(job, 0, 5s);
  EXPECT_LT(f.at - started, 1000) << "the taken port was reported late";
  EXPECT_EQ(f.code, 2) << "trncclSystemError expected: " << f.message;
  EXPECT_NE(f.message.find("127.0.0.1:" + std::to_string(squatter.port)), std::string::npos)
      << f.message;
  EXPECT_NE(f.message.find("Address already in use"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("TRNCCL_COMM_ID"), std::string::npos) << f.message;
  InitFailure other = expectInitFailure(job, 1, std::chrono::milliseconds(timeoutMs + 5000));
  EXPECT_EQ(other.code, kTimeout) << other.message;
  EXPECT_LE(other.at - started, timeoutMs + 2000);
}

// P1: without TRNCCL_COMM_ID the root binds a port the kernel assigns and the id carries it, and
// the tcp transport's listeners take OS-assigned ports too: two 3-rank jobs started at the same
// moment both complete, each on its own ports.
TEST(Fault, ConcurrentJobsGetTheirOwnPorts) {
  char dir[] = "/tmp/trnccl-p1-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  std::vector<std::unique_ptr<Job>> jobs;
  for (const char* name : {"a", "b"}) {
    jobs.push_back(std::make_unique<Job>(
        "loop", 3,
        std::vector<std::string>{"count=1024", "per_sync=1", "iters=400",
                                 std::string("id_file=") + dir + "/" + name},
        std::map<std::string, std::string>{
            {"TRNCCL_COMM_ID", ""}, {"TRNCCL_TRANSPORT", "tcp"}, {"TRNCCL_TIMEOUT_MS", "20000"}}));
  }
  for (auto& job : jobs) job->startAll();
  std::vector<std::set<uint16_t>> ports(2);
  for (int j = 0; j < 2; ++j) {
    for (int r = 0; r < 3; ++r) {
      ASSERT_TRUE(jobs[j]->waitLine(r, "READY", 30s)) << jobs[j]->output(r);
    }
    // The root listens in rank 0's process for as long as the communicator lives.
    for (const TcpEntry& e : tcpOf(jobs[j]->pid(0), kTcpListen)) ports[j].insert(e.localPort);
  }
  for (int j = 0; j < 2; ++j) {
    for (int r = 0; r < 3; ++r) {
      EXPECT_TRUE(jobs[j]->waitLine(r, "DONE", 60s)) << "job " << j << " rank " << r << ":\n"
                                                     << jobs[j]->output(r);
    }
  }
  jobs.clear();
  std::filesystem::remove_all(dir);
  for (int j = 0; j < 2; ++j) EXPECT_FALSE(ports[j].empty()) << "job " << j << " had no listener";
  for (uint16_t p : ports[0]) EXPECT_EQ(ports[1].count(p), 0u) << "both jobs listen on " << p;
}

}  // namespace
}  // namespace trnccl::fault
