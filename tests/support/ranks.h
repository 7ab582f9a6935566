// The in-process N-rank harness: one thread per rank, each with its own device, communicator
// and stream (trncclCommInitAll). Communicators are kept per rank count and shared across test
// cases, as the suite would otherwise spend its time in init.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "trnccl/trnccl.h"

namespace trnccl::testing {

// Runs fn(rank) for ranks 0..n-1 on one thread each (each thread on the rank's device) and
// joins them.
inline void runPerRank(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      trnrtSetDevice(r);
      fn(r);
    });
  }
  for (auto& t : threads) t.join();
}

class Ranks {
 public:
  explicit Ranks(int n) : comms_(n), streams_(n) {
    EXPECT_EQ(trncclCommInitAll(comms_.data(), n, nullptr), trncclSuccess)
        << trncclGetLastError(nullptr);
    for (int r = 0; r < n; ++r) {
      trnrtSetDevice(r);
      EXPECT_EQ(trnrtStreamCreate(&streams_[r]), trnrtSuccess);
    }
    trnrtSetDevice(0);
  }
  ~Ranks() {
    for (int r = 0; r < size(); ++r) {
      trnrtStreamDestroy(streams_[r]);
      trncclCommDestroy(comms_[r]);
    }
  }
  int size() const { return static_cast<int>(comms_.size()); }
  trncclComm_t comm(int r) const { return comms_[r]; }
  trnrtStream_t stream(int r) const { return streams_[r]; }

  // Runs fn(rank) on one thread per rank (each thread on the rank's device) and joins them.
  void run(const std::function<void(int)>& fn) const { runPerRank(size(), fn); }

  // Communicators shared by the cases of one rank count. With ranksPerInstance > 0 they are
  // created with TRNCCL_EMU_RANKS_PER_NODE set, so every that many consecutive ranks form one
  // emulated instance; with a topology, with TRNCCL_TOPOLOGY set to it. Only the latest
  // (n, ranksPerInstance, topology) stays alive: cases come in blocks of one size, and keeping
  // every size's communicators (transport buffers of up to 36 ranks) ran the TSan build out of
  // memory.
  static Ranks& get(int n, int ranksPerInstance = 0, const std::string& topology = "") {
    static std::tuple<int, int, std::string> key;
    static std::unique_ptr<Ranks> cached;
    if (!cached || key != std::tuple{n, ranksPerInstance, topology}) {
      cached.reset();
      if (ranksPerInstance > 0) {
        setenv("TRNCCL_EMU_RANKS_PER_NODE", std::to_string(ranksPerInstance).c_str(), 1);
      }
      if (!topology.empty()) setenv("TRNCCL_TOPOLOGY", topology.c_str(), 1);
      cached = std::make_unique<Ranks>(n);
      unsetenv("TRNCCL_EMU_RANKS_PER_NODE");
      if (!topology.empty()) unsetenv("TRNCCL_TOPOLOGY");
      key = {n, ranksPerInstance, topology};
    }
    return *cached;
  }

 private:
  std::vector<trncclComm_t> comms_;
  std::vector<trnrtStream_t> streams_;
};

}  // namespace trnccl::testing
