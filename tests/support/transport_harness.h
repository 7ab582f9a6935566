// What the transport unit tests share (tests/unit/shm, tcp, ofi): an out-of-band allGather
// among ranks that are threads of one process, a poll loop that drives transfers the way the
// schedule executor does, test data, and a scoped environment variable.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/wait.h"
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

inline uint64_t randomCommHash() {
  std::random_device device;
  return (uint64_t{device()} << 32) | device();
}

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

}  // namespace trnccl::transport::test
