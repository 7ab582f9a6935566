// Ranks of one transport with their doorbells and setup contexts, alone (Rank, for ranks that
// are processes) or as N threads of this process that set up connections collectively
// (Cluster).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/wait.h"
#include "device/device_api.h"
#include "support/transport/oob.h"
#include "support/transport/transfer.h"
#include "transports/core/transport.h"

namespace trnccl::transport::test {

using namespace std::chrono_literals;

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
  // Rank's peers with its connections to them, in the order it connected.
  Links links(int rank) {
    Links out;
    for (size_t i = 0; i < connections[static_cast<size_t>(rank)].size(); ++i) {
      out.emplace_back(peers[static_cast<size_t>(rank)][i], conn(rank, i));
    }
    return out;
  }
  Doorbell& bell(int rank) { return ranks[static_cast<size_t>(rank)]->bell; }

  // Polls connection->checkPeer() as rank's executor does while stuck (sleeping on its
  // doorbell, at most 50 ms between checks) until it fails or `limit` passes; its error or OK.
  Status checkUntilError(int rank, Connection* connection, std::chrono::milliseconds limit) {
    Deadline deadline = Deadline::after(limit);
    while (!deadline.expired()) {
      uint32_t seen = bell(rank).snapshot();
      Status status = connection->checkPeer();
      if (!status) return status;
      bell(rank).sleep(seen, std::chrono::milliseconds(50));
    }
    return Status::ok();
  }

  // A liveness check's idle case: every rank polls its first connection for `quiet`, which
  // must show no error (heartbeats alone keep it alive), then every rank exchanges a message
  // with each peer, which must still work. The first error, or OK.
  Status idleThenExchange(std::chrono::milliseconds quiet) {
    TRN_TRY(runEach([&](int r) { return checkUntilError(r, conn(r, 0), quiet); }));
    return runEach([&](int r) { return exchangeStep(bell(r), r, 0, 100000, links(r)); });
  }

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

}  // namespace trnccl::transport::test
