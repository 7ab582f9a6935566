// A small launcher for fault tests: fork/exec N rank processes (fault_rank.cc) with
// TRNCCL_COMM_ID=127.0.0.1:<free port>, so no MPI is needed and the test owns every pid it may
// kill. Each rank's stdout is a pipe of event lines the test waits for; its stdin is a pipe the
// test closes to release a rank that holds (see fault_rank.cc). Children die with the test
// (PR_SET_PDEATHSIG) and have their own watchdog; the destructor kills what is left, by pid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trnccl::fault {

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close).
int freePort();

// CLOCK_MONOTONIC in ms: the clock the ranks print.
long long nowMs();

class Job {
 public:
  // `args` follow "<mode> <rank> <nranks>"; `env` is added to this process's environment.
  // port 0: a free one; pass an earlier job's port to rerun with the same id.
  Job(std::string mode, int nranks, std::vector<std::string> args = {},
      std::map<std::string, std::string> env = {}, int port = 0);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  int port() const { return port_; }
  int nranks() const { return static_cast<int>(ranks_.size()); }
  void start(int rank);
  void startAll();

  // Waits until rank's output has a line starting with `prefix`; returns it (without prefix).
  std::optional<std::string> waitLine(int rank, const std::string& prefix,
                                      std::chrono::milliseconds timeout);
  // Every line rank printed so far that starts with `prefix`.
  std::vector<std::string> lines(int rank, const std::string& prefix);
  std::string output(int rank) const;  // for failure messages

  void signal(int rank, int sig);
  void closeStdin(int rank);
  pid_t pid(int rank) const { return ranks_[rank].pid; }
  // Waits for the rank to exit; its wait status, or nullopt on timeout.
  std::optional<int> waitExit(int rank, std::chrono::milliseconds timeout);

 private:
  struct Rank {
    pid_t pid = -1;
    int out = -1;
    int in = -1;
    std::string pending;
    std::vector<std::string> lines;
    bool exited = false;
    int status = 0;
  };
  // Reads what the ranks printed, waiting at most `timeout` for anything.
  void pump(std::chrono::milliseconds timeout);
  void reap(Rank& r, bool block);

  std::string mode_;
  std::vector<std::string> args_;
  std::map<std::string, std::string> env_;
  int port_;
  std::vector<Rank> ranks_;
};

}  // namespace trnccl::fault
