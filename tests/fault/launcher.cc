#include "fault/launcher.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <string>

extern char** environ;

#ifndef FAULT_RANK_BIN
#error "FAULT_RANK_BIN must name the fault_rank executable"
#endif

namespace trnccl::fault {

// A port nothing listens on, below the kernel's ephemeral range: a port the kernel handed out
// and took back (bind to port 0) can be handed to another process's outgoing connection before
// the job's root binds it ("Address already in use", seen once in CI with tests running in
// parallel); a port outside that range is only ever taken by an explicit bind.
int freePort() {
  int low = 32768;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &low) != 1) low = 32768;
    std::fclose(f);
  }
  std::mt19937 rng(std::random_device{}());
  const int first = 10000, last = std::max(first + 1000, low) - 1;
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = std::uniform_int_distribution<int>(first, last)(rng);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    ::close(fd);
    if (free) return port;
  }
  throw std::runtime_error(std::string("freePort: no free port below ") + std::to_string(low));
}

long long nowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

Job::Job(std::string mode, int nranks, std::vector<std::string> args,
         std::map<std::string, std::string> env, int port)
    : mode_(std::move(mode)),
      args_(std::move(args)),
      env_(std::move(env)),
      port_(port != 0 ? port : freePort()),
      ranks_(nranks) {
  // A test may set TRNCCL_COMM_ID itself ("" for none: the ranks exchange the id otherwise).
  env_.emplace("TRNCCL_COMM_ID", "127.0.0.1:" + std::to_string(port_));
  env_.emplace("TRNCCL_BOOTSTRAP_HOST", "127.0.0.1");
  env_.emplace("TRNCCL_SOCKET_IFNAME", "lo");
}

Job::~Job() {
  for (Rank& r : ranks_) {
    if (r.pid > 0 && !r.exited) {
      ::kill(r.pid, SIGKILL);
      reap(r, true);
    }
    if (r.out >= 0) ::close(r.out);
    if (r.in >= 0) ::close(r.in);
  }
}

void Job::start(int rank) {
  int out[2], in[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(in, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  std::vector<std::string> argv = {FAULT_RANK_BIN, mode_, std::to_string(rank),
                                   std::to_string(nranks())};
  argv.insert(argv.end(), args_.begin(), args_.end());
  // The environment is built before fork: the child only calls async-signal-safe functions.
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) merged[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (const auto& [k, v] : env_) merged[k] = v;
  std::vector<std::string> envStrings;
  for (const auto& [k, v] : merged) envStrings.push_back(k + "=" + v);
  std::vector<char*> cenv, cargv;
  for (auto& e : envStrings) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(120);
    ::dup2(out[1], 1);
    ::dup2(in[0], 0);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(in[0]);
  Rank& r = ranks_[rank];
  r.pid = pid;
  r.out = out[0];
  r.in = in[1];
  ::fcntl(r.out, F_SETFL, O_NONBLOCK);
}

void Job::startAll() {
  for (int r = 0; r < nranks(); ++r) start(r);
}

void Job::pump(std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  std::vector<Rank*> owners;
  for (Rank& r : ranks_) {
    if (r.out >= 0) {
      fds.push_back({r.out, POLLIN, 0});
      owners.push_back(&r);
    }
  }
  if (fds.empty()) {
    ::usleep(static_cast<useconds_t>(std::min<long>(timeout.count(), 20) * 1000));
    return;
  }
  if (::poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    Rank& r = *owners[i];
    char buf[4096];
    ssize_t n;
    while ((n = ::read(r.out, buf, sizeof(buf))) > 0) r.pending.append(buf, static_cast<size_t>(n));
    if (n == 0) {
      ::close(r.out);
      r.out = -1;
    }
    size_t nl;
    while ((nl = r.pending.find('\n')) != std::string::npos) {
      r.lines.push_back(r.pending.substr(0, nl));
      r.pending.erase(0, nl + 1);
    }
  }
}

std::optional<std::string> Job::waitLine(int rank, const std::string& prefix,
                                         std::chrono::milliseconds timeout) {
  long long end = nowMs() + timeout.count();
  size_t seen = 0;
  while (true) {
    const auto& lines = ranks_[rank].lines;
    for (; seen < lines.size(); ++seen) {
      if (lines[seen].rfind(prefix, 0) == 0) return lines[seen].substr(prefix.size());
    }
    long long left = end - nowMs();
    if (left <= 0) return std::nullopt;
    if (ranks_[rank].out < 0 && ranks_[rank].pending.empty()) {
      return std::nullopt;  // the rank closed its output: nothing more will come
    }
    pump(std::chrono::milliseconds(std::min<long long>(left, 100)));
  }
}

std::vector<std::string> Job::lines(int rank, const std::string& prefix) {
  pump(std::chrono::milliseconds(0));
  std::vector<std::string> out;
  for (const auto& l : ranks_[rank].lines) {
    if (l.rfind(prefix, 0) == 0) out.push_back(l.substr(prefix.size()));
  }
  return out;
}

std::string Job::output(int rank) const {
  std::string s;
  for (const auto& l : ranks_[rank].lines) s += "  " + l + "\n";
  return s + "  " + ranks_[rank].pending;
}

void Job::signal(int rank, int sig) {
  if (ranks_[rank].pid > 0 && !ranks_[rank].exited) ::kill(ranks_[rank].pid, sig);
}

void Job::closeStdin(int rank) {
  if (ranks_[rank].in >= 0) ::close(ranks_[rank].in);
  ranks_[rank].in = -1;
}

void Job::reap(Rank& r, bool block) {
  if (r.exited || r.pid <= 0) return;
  int status = 0;
  if (::waitpid(r.pid, &status, block ? 0 : WNOHANG) == r.pid) {
    r.exited = true;
    r.status = status;
  }
}

std::optional<int> Job::waitExit(int rank, std::chrono::milliseconds timeout) {
  long long end = nowMs() + timeout.count();
  Rank& r = ranks_[rank];
  while (true) {
    reap(r, false);
    if (r.exited) {
      pump(std::chrono::milliseconds(0));
      return r.status;
    }
    if (nowMs() >= end) return std::nullopt;
    pump(std::chrono::milliseconds(20));
  }
}

}  // namespace trnccl::fault
