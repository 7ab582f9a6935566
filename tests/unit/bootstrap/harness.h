// Helpers for the bootstrap tests: N ranks as N threads of this process, and raw loopback
// sockets to play hostile or broken peers. Everything uses 127.0.0.1 only.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "unit/net/raw_socket.h"

namespace trnccl::bootstrap::test {

inline UniqueId newId() {
  setenv("TRNCCL_BOOTSTRAP_HOST", "127.0.0.1", 1);
  auto id = createUniqueId();
  EXPECT_TRUE(id.isOk()) << id.status().message();
  return id.isOk() ? *id : UniqueId{};
}

inline std::vector<std::byte> infoFor(int rank) {
  // Different lengths per rank, so the table's offsets are exercised.
  return std::vector<std::byte>(static_cast<size_t>(rank % 5) + 3, static_cast<std::byte>(rank));
}

// Runs `body(rank)` on one thread per rank and joins them all.
inline void runThreads(const std::vector<int>& ranks, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r : ranks) threads.emplace_back(body, r);
  for (auto& t : threads) t.join();
}

inline std::vector<int> allRanks(int n) {
  std::vector<int> ranks(n);
  for (int r = 0; r < n; ++r) ranks[r] = r;
  return ranks;
}

inline std::unique_ptr<Bootstrap> connectRank(
    const UniqueId& id, int rank, int nranks,
    std::chrono::milliseconds budget = std::chrono::milliseconds(10000)) {
  auto info = infoFor(rank);
  auto b = Bootstrap::connect(id, rank, nranks, info, Deadline::after(budget));
  EXPECT_TRUE(b.isOk()) << "rank " << rank << ": " << b.status().message();
  return b.isOk() ? std::move(b.value()) : nullptr;
}

using transport::net::test::RawSocket;

}  // namespace trnccl::bootstrap::test
