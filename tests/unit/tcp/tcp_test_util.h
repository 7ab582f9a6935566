// Test harness for the TCP transport: ranks as threads of this process with an in-memory oob
// channel, and a poll loop that drives transfers the way the schedule executor does. Every
// listener is on loopback.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
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
#include "transports/tcp/tcp_transport.h"

namespace trnccl::transport::tcp::test {

using namespace transport::test;  // the shared harness (support/transport_harness.h)

using namespace std::chrono_literals;

// Tests listen on loopback only, whatever else this machine has (set before main runs).
inline const bool kLoopbackOnly = [] { return ::setenv("TRNCCL_SOCKET_IFNAME", "=lo", 1) == 0; }();

struct Rank {
  Rank(int rank, int nranks, uint64_t commHash, OobChannel* oob) {
    transport = makeTcpTransport();
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
      ctx.peers.push_back(info);
    }
  }
  Doorbell bell;  // declared first: outlives the transport
  SetupContext ctx;
  std::unique_ptr<Transport> transport;
};

// N ranks as threads: connect() runs in one thread per rank (it is collective).
struct Cluster {
  explicit Cluster(int n) : size(n), hash(randomCommHash()), group(n) {
    for (int r = 0; r < n; ++r) {
      oobs.push_back(std::make_unique<ThreadOob>(group, r));
      ranks.push_back(std::make_unique<Rank>(r, n, hash, oobs.back().get()));
    }
    connections.resize(static_cast<size_t>(n));
    statuses.resize(static_cast<size_t>(n));
  }

  Status connect(const std::function<std::vector<int>(int)>& peersOf) {
    return runEach([&](int r) -> Status {
      auto result = ranks[static_cast<size_t>(r)]->transport->connect(
          ranks[static_cast<size_t>(r)]->ctx, peersOf(r));
      if (!result) return result.status();
      connections[static_cast<size_t>(r)] = std::move(*result);
      return Status::ok();
    });
  }

  Status connectAll() {
    return connect([this](int r) {
      std::vector<int> peers;
      for (int p = 0; p < size; ++p) {
        if (p != r) peers.push_back(p);
      }
      return peers;
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

  Connection* conn(int rank, size_t index) {
    return connections[static_cast<size_t>(rank)][index].get();
  }
  Doorbell& bell(int rank) { return ranks[static_cast<size_t>(rank)]->bell; }

  int size;
  uint64_t hash;
  OobGroup group;
  std::vector<std::unique_ptr<ThreadOob>> oobs;
  std::vector<std::unique_ptr<Rank>> ranks;
  std::vector<std::vector<std::unique_ptr<Connection>>> connections;  // destroyed first
  std::vector<Status> statuses;
};

// Entries of a /proc/self directory ("fd", "task").
inline size_t countEntries(const char* dir) {
  size_t n = 0;
  if (DIR* d = ::opendir(dir)) {
    while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

}  // namespace trnccl::transport::tcp::test
