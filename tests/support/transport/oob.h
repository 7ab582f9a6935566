// Out-of-band allGather for transport tests: among ranks that are threads of one process
// (OobGroup, one ThreadOob per rank) or between two processes over a socketpair (SocketOob).
#pragma once

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "common/status.h"
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

}  // namespace trnccl::transport::test
