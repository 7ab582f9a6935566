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
#include "device/device_api.h"
#include "support/transport_harness.h"
#include "transports/core/transport.h"
#include "transports/ofi/ofi_transport.h"
#include "transports/ofi/provider.h"

namespace trnccl::transport::ofi::test {

using namespace transport::test;  // the shared harness (support/transport_harness.h)

using namespace std::chrono_literals;

// libfabric reads FI_TCP_IFACE once, when it initialises: set it before main runs.
inline const bool kLoopbackOnly = [] { return ::setenv("FI_TCP_IFACE", "lo", 0) == 0; }();

struct Rank {
  Rank(int rank, int nranks, OobChannel* oob) {
    transport = makeOfiTransport();
    ctx.rank = rank;
    ctx.nranks = nranks;
    ctx.commHash = 0x0f1;
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

}  // namespace trnccl::transport::ofi::test
