// Test harness for the shm transport: out-of-band channels for ranks as threads (shared state
// with a condvar) or as forked processes (a socketpair), a rank fixture, and a poll loop that
// drives transfers the way the schedule executor does.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/wait.h"
#include "device/device_api.h"
#include "support/transport_harness.h"
#include "transports/core/transport.h"
#include "transports/shm/shm_transport.h"

namespace trnccl::transport::shm::test {

using namespace transport::test;  // the shared harness (support/transport_harness.h)

using namespace std::chrono_literals;

// allGather between two processes over one end of a socketpair.
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

// One rank: its doorbell, transport and setup context.
struct Rank {
  Rank(int rank, int nranks, uint64_t commHash, OobChannel* oob) {
    transport = makeShmTransport();
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

  Doorbell bell;  // declared first: outlives the connections rebound into it
  SetupContext ctx;
  std::unique_ptr<Transport> transport;
};

// Names in /dev/shm that belong to the communicator `commHash`.
inline std::vector<std::string> leftoverSegments(uint64_t commHash) {
  std::string prefix = fmt::format("trnccl-{:016x}-", commHash);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

}  // namespace trnccl::transport::shm::test

namespace trnccl::transport::shm::test {

// N ranks as threads of this process: connect() runs in one thread per rank (it is
// collective); transfers may then be driven from any thread.
struct Cluster {
  explicit Cluster(int n, uint64_t commHash = randomCommHash())
      : size(n), hash(commHash), group(n) {
    for (int r = 0; r < n; ++r) {
      oobs.push_back(std::make_unique<ThreadOob>(group, r));
      ranks.push_back(std::make_unique<Rank>(r, n, commHash, oobs.back().get()));
    }
    connections.resize(static_cast<size_t>(n));
    statuses.resize(static_cast<size_t>(n));
  }

  // Connects every rank to peersOf(rank); returns the first error (statuses has all).
  Status connect(const std::function<std::vector<int>(int)>& peersOf) {
    return runEach([&](int r) -> Status {
      auto result = ranks[static_cast<size_t>(r)]->connect(peersOf(r));
      if (!result) return result.status();
      connections[static_cast<size_t>(r)] = std::move(*result);
      return Status::ok();
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

  Connection* conn(int rank, size_t index) {
    return connections[static_cast<size_t>(rank)][index].get();
  }

  int size;
  uint64_t hash;
  OobGroup group;
  std::vector<std::unique_ptr<ThreadOob>> oobs;
  std::vector<std::unique_ptr<Rank>> ranks;
  std::vector<std::vector<std::unique_ptr<Connection>>> connections;  // destroyed first
  std::vector<Status> statuses;
};

}  // namespace trnccl::transport::shm::test
