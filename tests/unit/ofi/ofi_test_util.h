// Test harness for the ofi transport: ranks as threads of this process with an in-memory oob
// channel, a poll loop that drives transfers the way the schedule executor does, and a scoped
// provider choice. Only loopback: libfabric's tcp provider is pinned to "lo".
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/wait.h"
#include "transports/ofi/ofi_transport.h"
#include "transports/ofi/provider.h"
#include "transports/transport.h"

namespace trnccl::transport::ofi::test {

using namespace std::chrono_literals;

// libfabric reads FI_TCP_IFACE once, when it initialises: set it before main runs.
inline const bool kLoopbackOnly = [] { return ::setenv("FI_TCP_IFACE", "lo", 0) == 0; }();

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
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else if (!cv_.wait_for(lock, 60s, [&] { return generation_ != generation; })) {
      return Status(Code::kTimeout, "test oob: allGather timed out");
    }
    return result_;  // the next round cannot overwrite it before this rank joins that round
  }

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

struct Rank {
  Rank(int rank, int nranks, OobChannel* oob) {
    transport = makeOfiTransport();
    ctx.rank = rank;
    ctx.nranks = nranks;
    ctx.commHash = 0x0f1;
    ctx.oob = oob;
    ctx.bell = &bell;
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
  Doorbell bell;  // declared first: outlives the transport and the waker threads
  SetupContext ctx;
  std::unique_ptr<Transport> transport;
};

// N ranks as threads: connect() runs in one thread per rank (it is collective).
struct Cluster {
  explicit Cluster(int n) : size(n), group(n) {
    for (int r = 0; r < n; ++r) {
      oobs.push_back(std::make_unique<ThreadOob>(group, r));
      ranks.push_back(std::make_unique<Rank>(r, n, oobs.back().get()));
    }
    peers.resize(static_cast<size_t>(n));
    connections.resize(static_cast<size_t>(n));
    statuses.resize(static_cast<size_t>(n));
  }
  ~Cluster() {
    // Connections close concurrently, as ranks of a job would (each lingers for its sends).
    std::vector<std::thread> threads;
    for (auto& c : connections) threads.emplace_back([&c] { c.clear(); });
    for (auto& t : threads) t.join();
  }

  Status connect(const std::function<std::vector<int>(int)>& peersOf) {
    return runEach([&](int r) -> Status {
      auto& rank = *ranks[static_cast<size_t>(r)];
      peers[static_cast<size_t>(r)] = peersOf(r);
      auto result = rank.transport->connect(rank.ctx, peers[static_cast<size_t>(r)]);
      if (!result) return result.status();
      connections[static_cast<size_t>(r)] = std::move(*result);
      return Status::ok();
    });
  }

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

  // rank's connection to peer.
  Connection* conn(int rank, int peer) {
    auto& list = peers[static_cast<size_t>(rank)];
    auto it = std::find(list.begin(), list.end(), peer);
    if (it == list.end()) return nullptr;
    return connections[static_cast<size_t>(rank)][static_cast<size_t>(it - list.begin())].get();
  }
  Doorbell& bell(int rank) { return ranks[static_cast<size_t>(rank)]->bell; }

  int size;
  OobGroup group;
  std::vector<std::unique_ptr<ThreadOob>> oobs;
  std::vector<std::unique_ptr<Rank>> ranks;
  std::vector<std::vector<int>> peers;
  std::vector<std::vector<std::unique_ptr<Connection>>> connections;  // destroyed first
  std::vector<Status> statuses;
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

// Polls like the executor: when a pass makes no progress, spin a little, then sleep on the
// doorbell (snapshot taken before the pass, so no ring is lost).
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
      bell.sleep(seen, 5ms);
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

class EnvGuard {
 public:
  EnvGuard(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value.c_str(), 1);
  }
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

}  // namespace trnccl::transport::ofi::test
