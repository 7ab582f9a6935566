// The one harness of the transport unit tests (tests/unit/shm, tcp, ofi): ranks as threads of
// one process with an in-memory oob allGather (or two processes over a socketpair), each with
// its doorbell, transport and SetupContext; a cluster of them that sets up connections
// collectively; a poll loop that drives transfers the way the schedule executor does; test
// data; a scoped environment variable; and what tests read to tell paths and leaks apart
// (counter differences, /proc/self entries). What stays in tests/unit/<transport> is only what
// is specific to that transport.
#pragma once

#include <dirent.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/wait.h"
#include "device/device_api.h"
#include "transports/core/counters.h"
#include "transports/core/transport.h"

namespace trnccl::transport::test {

using namespace std::chrono_literals;

// allGather among the threads of one process.
class OobGroup {
 public:
  explicit OobGroup(int n) : n_(n), slots_(static_cast<size_t>(n)) {}

  Result<std::vector<std::byte>> allGather(int rank, std::span<const std::byte> mine) {
    std::unique_lock lock(mutex_);
    uint64_t generation = generation_;
    slots_[static_cast<size_t>(rank)].assign(mine.begin(), mine.end());
    if (++arrived_ == n_) {
      result_.clear();
      for (auto& slot : slots_) result_.insert(result_.end(), slot.begin(), slot.end());
      if (hook) hook(generation_, result_);
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else if (!cv_.wait_for(lock, 60s, [&] { return generation_ != generation; })) {
      return Status(Code::kTimeout, "test oob: allGather timed out");
    }
    // The next round cannot complete (and overwrite result_) before this rank joins it.
    return result_;
  }

  // Sees every round's result before any rank gets it.
  std::function<void(uint64_t round, const std::vector<std::byte>& all)> hook;

 private:
  const int n_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::vector<std::byte>> slots_;
  std::vector<std::byte> result_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
};

class ThreadOob final : public OobChannel {
 public:
  ThreadOob(OobGroup& group, int rank) : group_(group), rank_(rank) {}
  Result<std::vector<std::byte>> allGather(std::span<const std::byte> mine) override {
    return group_.allGather(rank_, mine);
  }
  Status barrier() override { return group_.allGather(rank_, {}).status(); }

 private:
  OobGroup& group_;
  int rank_;
};

// allGather between two processes (ranks 0 and 1) over one end of a socketpair.
class SocketOob final : public OobChannel {
 public:
  SocketOob(int fd, int rank) : fd_(fd), rank_(rank) {}
  Result<std::vector<std::byte>> allGather(std::span<const std::byte> mine) override {
    uint64_t size = mine.size();
    if (!writeAll(&size, sizeof(size)) || !writeAll(mine.data(), mine.size())) {
      return Status(Code::kSystemError, "test oob: write failed");
    }
    uint64_t theirSize = 0;
    if (!readAll(&theirSize, sizeof(theirSize))) return Status(Code::kSystemError, "oob read");
    std::vector<std::byte> theirs(theirSize);
    if (!readAll(theirs.data(), theirs.size())) return Status(Code::kSystemError, "oob read");
    std::vector<std::byte> all;
    const auto& first = rank_ == 0 ? std::vector<std::byte>(mine.begin(), mine.end()) : theirs;
    const auto& second = rank_ == 0 ? theirs : std::vector<std::byte>(mine.begin(), mine.end());
    all.insert(all.end(), first.begin(), first.end());
    all.insert(all.end(), second.begin(), second.end());
    return all;
  }
  Status barrier() override { return allGather({}).status(); }

 private:
  bool writeAll(const void* data, size_t bytes) {
    auto* p = static_cast<const char*>(data);
    while (bytes > 0) {
      ssize_t n = ::write(fd_, p, bytes);
      if (n <= 0) return false;
      p += n;
      bytes -= static_cast<size_t>(n);
    }
    return true;
  }
  bool readAll(void* data, size_t bytes) {
    auto* p = static_cast<char*>(data);
    while (bytes > 0) {
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, 30000) <= 0) return false;
      ssize_t n = ::read(fd_, p, bytes);
      if (n <= 0) return false;
      p += n;
      bytes -= static_cast<size_t>(n);
    }
    return true;
  }

  int fd_;
  int rank_;
};

inline uint64_t randomCommHash() {
  std::random_device device;
  return (uint64_t{device()} << 32) | device();
}

// One rank: its doorbell, transport and setup context. Every rank is on this host (one host
// hash and boot id), and device memory is located by the emulated runtime.
struct Rank {
  Rank(std::unique_ptr<Transport> t, int rank, int nranks, uint64_t commHash, OobChannel* oob)
      : transport(std::move(t)) {
    ctx.rank = rank;
    ctx.nranks = nranks;
    ctx.commHash = commHash;
    ctx.oob = oob;
    ctx.bell = &bell;
    ctx.locate = [](const void* p) { return device::locate(p); };
    ctx.deadline = Deadline::after(30s);
    for (int r = 0; r < nranks; ++r) {
      PeerInfo info;
      info.rank = r;
      info.pid = static_cast<int32_t>(::getpid());
      info.hostHash = 42;
      info.bootId = 7;
      ctx.peers.push_back(info);
    }
  }
  Result<std::vector<std::unique_ptr<Connection>>> connect(const std::vector<int>& peers) {
    return transport->connect(ctx, peers);
  }

  // Declared first: outlives the transport, its threads and the connections rebound into it.
  Doorbell bell;
  SetupContext ctx;
  std::unique_ptr<Transport> transport;
};

using TransportFactory = std::unique_ptr<Transport> (*)();

// N ranks as threads of this process: connect() runs in one thread per rank (it is
// collective); transfers may then be driven from any thread.
struct Cluster {
  Cluster(TransportFactory make, int n, uint64_t commHash) : size(n), hash(commHash), group(n) {
    for (int r = 0; r < n; ++r) {
      oobs.push_back(std::make_unique<ThreadOob>(group, r));
      ranks.push_back(std::make_unique<Rank>(make(), r, n, commHash, oobs.back().get()));
    }
    peers.resize(static_cast<size_t>(n));
    connections.resize(static_cast<size_t>(n));
    statuses.resize(static_cast<size_t>(n));
  }
  ~Cluster() {
    // Connections close concurrently, as ranks of a job would (each may linger for its sends).
    std::vector<std::thread> threads;
    for (auto& c : connections) threads.emplace_back([&c] { c.clear(); });
    for (auto& t : threads) t.join();
  }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Connects every rank to peersOf(rank); returns the first error (statuses has all).
  Status connect(const std::function<std::vector<int>(int)>& peersOf) {
    return runEach([&](int r) -> Status {
      peers[static_cast<size_t>(r)] = peersOf(r);
      auto result = ranks[static_cast<size_t>(r)]->connect(peers[static_cast<size_t>(r)]);
      if (!result) return result.status();
      connections[static_cast<size_t>(r)] = std::move(*result);
      return Status::ok();
    });
  }

  // Connects every rank to every other.
  Status connectAll() {
    return connect([this](int r) {
      std::vector<int> all;
      for (int p = 0; p < size; ++p) {
        if (p != r) all.push_back(p);
      }
      return all;
    });
  }

  // Runs fn(rank) in one thread per rank; returns the first error.
  Status runEach(const std::function<Status(int)>& fn) {
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) {
      threads.emplace_back([&, r] { statuses[static_cast<size_t>(r)] = fn(r); });
    }
    for (auto& thread : threads) thread.join();
    for (const Status& status : statuses) {
      if (!status) return status;
    }
    return Status::ok();
  }

  // Rank's connection number `index`, in the order of the peers it connected to.
  Connection* conn(int rank, size_t index) {
    return connections[static_cast<size_t>(rank)][index].get();
  }
  // Rank's connection to `peer`, or nullptr.
  Connection* connTo(int rank, int peer) {
    auto& list = peers[static_cast<size_t>(rank)];
    auto it = std::find(list.begin(), list.end(), peer);
    if (it == list.end()) return nullptr;
    return conn(rank, static_cast<size_t>(it - list.begin()));
  }
  Doorbell& bell(int rank) { return ranks[static_cast<size_t>(rank)]->bell; }

  int size;
  uint64_t hash;
  OobGroup group;
  std::vector<std::unique_ptr<ThreadOob>> oobs;
  std::vector<std::unique_ptr<Rank>> ranks;
  std::vector<std::vector<int>> peers;                                // what each rank connected to
  std::vector<std::vector<std::unique_ptr<Connection>>> connections;  // destroyed first
  std::vector<Status> statuses;
};

// A Cluster of one transport: `using Cluster = ClusterOf<makeShmTransport>;`.
template <TransportFactory Make>
struct ClusterOf : Cluster {
  explicit ClusterOf(int n, uint64_t commHash = randomCommHash()) : Cluster(Make, n, commHash) {}
};

// A Rank of one transport, for ranks that are processes.
template <TransportFactory Make>
struct RankOf : Rank {
  RankOf(int rank, int nranks, uint64_t commHash, OobChannel* oob)
      : Rank(Make(), rank, nranks, commHash, oob) {}
};

struct SendOp {
  Connection* connection;
  const std::byte* src;
  size_t bytes;
  size_t sent = 0;
  bool done = false;
};

struct RecvOp {
  Connection* connection;
  std::byte* dst;
  size_t bytes;
  size_t got = 0;
};

// Polls every operation like the executor: when a pass makes no progress, spin a little, then
// sleep on the doorbell (snapshot taken before the pass, so no ring is lost).
inline Status drive(Doorbell& bell, std::vector<SendOp>& sends, std::vector<RecvOp>& recvs,
                    Deadline deadline = Deadline::after(60s)) {
  Backoff backoff;
  while (true) {
    uint32_t seen = bell.snapshot();
    bool progress = false;
    bool finished = true;
    for (SendOp& op : sends) {
      if (op.done) continue;
      if (op.sent < op.bytes) {
        Result<size_t> n = op.connection->sendSome(op.src + op.sent, op.bytes - op.sent);
        if (!n) return n.status();
        op.sent += *n;
        progress |= *n > 0;
      }
      if (op.sent == op.bytes) {
        Result<bool> done = op.connection->sendDone();
        if (!done) return done.status();
        op.done = *done;
        progress |= op.done;
      }
      finished &= op.done;
    }
    for (RecvOp& op : recvs) {
      if (op.got == op.bytes) continue;
      size_t expectedOffset = op.got;
      bool ordered = true;
      Result<size_t> n = op.connection->recvSome(
          op.bytes - op.got, [&](size_t offset, const std::byte* data, size_t bytes) {
            ordered &= offset == expectedOffset;
            std::memcpy(op.dst + offset, data, bytes);
            expectedOffset += bytes;
          });
      if (!n) return n.status();
      if (!ordered) return Status(Code::kInternalError, "consumer pieces out of order");
      op.got += *n;
      progress |= *n > 0;
      finished &= op.got == op.bytes;
    }
    if (finished) return Status::ok();
    if (deadline.expired()) return Status(Code::kTimeout, "test: transfer timed out");
    if (progress) {
      backoff.reset();
    } else if (!backoff.next()) {
      bell.sleep(seen, 1ms);
    }
  }
}

inline void fillPattern(std::vector<std::byte>& buffer, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (auto& b : buffer) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::byte>(x);
  }
}

// Scoped environment variable.
class EnvGuard {
 public:
  EnvGuard(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value.c_str(), 1);
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;
  ~EnvGuard() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// How much a transport's counters (transports/core/counters.h) moved since construction; they
// are per process and cumulative.
template <typename Event>
class CounterDelta {
 public:
  CounterDelta() : start_(Counters<Event>::process().snapshot()) {}
  int64_t get(Event event) const {
    return Counters<Event>::process().get(event) - start_[static_cast<size_t>(event)];
  }

 private:
  std::array<int64_t, Counters<Event>::kEvents> start_;
};

// Entries of a /proc/self directory ("fd", "task"): what a transport left open or running.
inline size_t countEntries(const char* dir) {
  size_t n = 0;
  if (DIR* d = ::opendir(dir)) {
    while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

}  // namespace trnccl::transport::test
