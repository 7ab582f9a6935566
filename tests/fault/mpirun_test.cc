// Reliability anchor M1: a job launched by mpirun (Open MPI without ULFM, so a failed process
// ends the job) loses one rank to kill -9. Within 10 s no rank process is left, none adopted by
// init, and /dev/shm holds nothing of the job. The ranks are fault_rank processes, found by a
// tag argument in their command line; mpirun runs in its own process group, which the test
// kills (by its id) on the way out.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "fault/launcher.h"
#include "fault/proc_stats.h"
#include "fault/scenario.h"

namespace trnccl::fault {
namespace {

using namespace std::chrono_literals;

// rank -> pid of the processes whose command line holds the argument `tag`.
std::map<int, pid_t> taggedRanks(const std::string& tag) {
  std::map<int, pid_t> out;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d != nullptr ? ::readdir(d) : nullptr) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> argv;
    for (size_t at = 0; at < all.size();) {
      size_t nul = all.find('\0', at);
      if (nul == std::string::npos) nul = all.size();
      argv.push_back(all.substr(at, nul - at));
      at = nul + 1;
    }
    if (argv.size() > 2 && argv.back() == tag) out[std::atoi(argv[2].c_str())] = pid;
  }
  if (d != nullptr) ::closedir(d);
  return out;
}

struct Mpirun {
  pid_t pid = -1;
  int out = -1;
  std::string text;
  bool exited = false;

  explicit Mpirun(std::vector<std::string> args) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t parent = ::getpid();
    pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(120);
      int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, 0);
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      ::execvp(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out = fds[0];
  }
  ~Mpirun() {
    if (pid > 0 && !exited) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out >= 0) ::close(out);
  }
  // Reads its output for up to `ms`; true once it exited.
  bool poll(int ms) {
    pollfd p{out, POLLIN, 0};
    if (out >= 0 && ::poll(&p, 1, ms) == 1) {
      char buf[4096];
      ssize_t n = ::read(out, buf, sizeof(buf));
      if (n > 0) text.append(buf, static_cast<size_t>(n));
      if (n == 0) {
        ::close(out);
        out = -1;
      }
    } else if (out < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    if (!exited && ::waitpid(pid, nullptr, WNOHANG) == pid) exited = true;
    return exited;
  }
  size_t count(const std::string& s) const {
    size_t n = 0;
    for (size_t at = text.find(s); at != std::string::npos; at = text.find(s, at + 1)) ++n;
    return n;
  }
};

TEST(Fault, MpirunKillLeavesNoOrphans) {
#ifndef MPIRUN_BIN
  skipTest("mpirun was not found at configure time");
#else
  const int port = freePort();
  const std::string tag = "m1=" + std::to_string(port);
  const std::string comm = "127.0.0.1:" + std::to_string(port);
  Mpirun mpirun({MPIRUN_BIN,
                 "--allow-run-as-root",
                 "--oversubscribe",
                 "--bind-to",
                 "none",
                 "--mca",
                 "btl",
                 "self,tcp",
                 "--mca",
                 "btl_tcp_if_include",
                 "lo",
                 "--mca",
                 "oob_tcp_if_include",
                 "lo",
                 "-x",
                 "TRNCCL_COMM_ID=" + comm,
                 "-x",
                 "TRNCCL_BOOTSTRAP_HOST=127.0.0.1",
                 "-x",
                 "TRNCCL_SOCKET_IFNAME=lo",
                 "-x",
                 "TRNCCL_TIMEOUT_MS=20000",
                 "-np",
                 "4",
                 "sh",
                 "-c",
                 "exec \"$0\" loop \"$OMPI_COMM_WORLD_RANK\" 4 count=65536 per_sync=1 "
                 "watchdog=60 " +
                     tag,
                 FAULT_RANK_BIN});
  ASSERT_GT(mpirun.pid, 0);
  long long end = nowMs() + 60000;
  while (mpirun.count("ITER 0 ") < 4 && nowMs() < end && !mpirun.poll(100)) {
  }
  ASSERT_EQ(mpirun.count("ITER 0 "), 4u) << "the job never ran:\n" << mpirun.text;
  std::map<int, pid_t> ranks = taggedRanks(tag);
  ASSERT_EQ(ranks.size(), 4u) << mpirun.text;
  long long killed = nowMs();
  ::kill(ranks[2], SIGKILL);
  while (nowMs() - killed < 10000 && !(mpirun.poll(100) && taggedRanks(tag).empty())) {
  }
  std::map<int, pid_t> left = taggedRanks(tag);
  EXPECT_TRUE(mpirun.exited) << "mpirun still runs 10 s after the kill:\n" << mpirun.text;
  EXPECT_TRUE(left.empty()) << left.size() << " rank processes left 10 s after the kill";
  std::printf("job gone %lld ms after the kill\n", nowMs() - killed);
  for (const auto& [rank, pid] : left) ::kill(pid, SIGKILL);
  EXPECT_EQ(shmEntries(shmPrefix(port)), 0) << "the job left segments in /dev/shm";
#endif
}

}  // namespace
}  // namespace trnccl::fault
