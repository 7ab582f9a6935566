// How the calibration's processes are started and where they run: process i on the (i mod k)-th
// of the k CPUs this process may use, as perf/sim/pin_rank.sh places rank i of the benchmark
// it is compared with. Shared by trnccl-sim-calibrate and trnccl-sim-calibrate-step.
#pragma once

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace trnccl::calibrate {

// The CPUs this process may run on.
inline std::vector<int> usableCpus() {
  cpu_set_t allowed;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  return cpus;
}

// Puts this process on the (i mod k)-th of the k CPUs it may run on.
inline void pin(int i) {
  const std::vector<int> cpus = usableCpus();
  if (cpus.empty()) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[static_cast<size_t>(i) % cpus.size()], &one);
  sched_setaffinity(0, sizeof(one), &one);
}

// Runs body(i) in `procs` forked processes, process i pinned as above, and waits for them all;
// false if one could not start or did not return true.
inline bool runProcesses(int procs, const std::function<bool(int)>& body) {
  std::vector<pid_t> children;
  for (int i = 0; i < procs; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      pin(i);
      _exit(body(i) ? 0 : 1);
    }
    if (pid < 0) break;
    children.push_back(pid);
  }
  bool ok = children.size() == static_cast<size_t>(procs);
  for (pid_t pid : children) {
    int status = 0;
    ok = waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok;
  }
  return ok;
}

}  // namespace trnccl::calibrate
