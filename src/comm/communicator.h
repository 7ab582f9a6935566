// The communicator: who the ranks are, how to reach each (bootstrap + transports), the
// collective sequence, and the error state. API calls build schedules and enqueue them on a
// stream; the stream's worker calls run().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/recovery.h"
#include "comm/config.h"
#include "comm/plan_cache.h"
#include "comm/transport_set.h"
#include "common/status.h"
#include "common/wait.h"
#include "plan/topology_view.h"
#include "schedule/executor.h"
#include "schedule/schedule.h"
#include "transports/core/registered.h"

namespace trnccl::comm {

class Communicator {
 public:
  // Collective over the nranks ranks: bootstrap, peer table, transport connections.
  static Result<std::unique_ptr<Communicator>> init(const bootstrap::UniqueId& id, int nranks,
                                                    int rank, int device, const Config& config);
  ~Communicator();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int device() const { return device_; }
  const Config& config() const { return config_; }
  // Replaces the tuner's overrides read at init (Config::tuning) and empties the plan cache:
  // for tests that run many algorithms on shared communicators. Not while calls are enqueued
  // from another thread.
  void setTuning(plan::Overrides tuning) {
    config_.tuning = std::move(tuning);
    planCache_.clear();
  }
  uint64_t commHash() const { return commHash_; }
  bootstrap::Bootstrap& bootstrap() { return *bootstrap_; }
  const std::vector<transport::PeerInfo>& peers() const { return peers_; }
  // The pipeline slice for this communicator's connections.
  size_t sliceBytes() const { return sliceBytes_; }
  // The algorithm of the last collective planned on this communicator (API thread; for tests
  // and logs).
  void notePlanned(const std::string& algorithm) {
    if (lastPlanned_ != algorithm) lastPlanned_ = algorithm;  // a loop repeats it: no copy
  }
  const std::string& lastPlanned() const { return lastPlanned_; }
  // The topology as the algorithms and the tuner see it.
  const plan::TopologyView& topology() const { return topology_; }
  // The plans of this communicator's calls, by signature (comm/plan_cache.h).
  PlanCache& planCache() { return planCache_; }
  // The buffers registered with trncclCommRegister; the transports read it on every send.
  transport::RegisteredMemory& registered() { return registered_; }

  // Called by the API thread, in call order: a task for the stream is about to be enqueued.
  // Collectives get the next collective sequence number (every rank calls them in the same
  // order); point-to-point tasks don't consume one.
  uint64_t beginTask(bool collective = true);
  // Called on the stream worker: runs one schedule; records a failure as the async error.
  Status run(const schedule::Schedule& s, uint64_t seq, const schedule::CallName& what);
  // Called on the stream worker when a task of beginTask() is over (ran or skipped).
  void endTask();

  // Waits until every enqueued task of this communicator finished (or the deadline).
  Status waitIdle(Deadline deadline);
  // Makes every wait of this communicator fail promptly; idempotent and thread-safe.
  void abort();
  bool aborted() const { return aborted_.load(); }
  // The first error of any task, sticky (Code::kOk if none).
  Status asyncError() const;
  // Records `s` as the async error unless one is set already (also used by check.cc).
  void setAsyncError(const Status& s);

  // Recovery (recovery.cc; bootstrap/recovery.h). revoke() declares the communicator broken on
  // every rank: this rank's running work fails now and the API refuses its later calls; the
  // root tells the others, whose waits fail within a peer check. Idempotent, any thread.
  void revoke();
  bool revoked() const { return revoked_.load(); }
  // Non-blocking: takes a failure or revoke the root reported into the async error, and drains
  // the recovery port's backlog (trncclCommGetAsyncError).
  void poll();
  // The peers whose process is gone or that cannot be reached, probed now (bounded, ~1 s).
  std::vector<int> failedRanks();
  // The id of the communicator of every rank not in `excluded` (ascending), agreed with those
  // ranks through the first of them, which creates it. Collective over those ranks.
  Result<bootstrap::UniqueId> shrinkId(const std::vector<int>& excluded, Deadline deadline);

 private:
  Communicator() = default;
  Status connect(const bootstrap::UniqueId& id);
  void groupInstancesByHost();
  void modelTransports();  // the cost model's transport terms from the connections
  void openRecoveryPort();
  std::chrono::milliseconds probeTimeout() const;
  // At most every 50 ms: bootstrap_->checkRoot(), its failure kept as the async error.
  void checkRootBetweenCalls(Clock::time_point now);

  int rank_ = 0;
  int nranks_ = 1;
  int device_ = 0;
  Config config_;
  uint64_t commHash_ = 0;
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  std::vector<transport::PeerInfo> peers_;
  Doorbell bell_;
  transport::RegisteredMemory registered_;  // before transports_: their connections read it
  std::unique_ptr<TransportSet> transports_;
  std::unique_ptr<bootstrap::RecoveryPort> recovery_;          // null if it could not be opened
  std::vector<bootstrap::RecoveryAddress> recoveryAddresses_;  // every rank's, by rank
  std::vector<transport::Connection*> conns_;  // transports_->connections(), by peer rank
  size_t sliceBytes_ = 64 * 1024;
  plan::TopologyView topology_;
  std::string lastPlanned_;
  PlanCache planCache_;
  schedule::ScratchArena scratch_;  // behind the schedules' scratch space, kept between calls

  std::atomic<uint64_t> nextSeq_{0};
  std::vector<uint64_t> p2pSent_, p2pReceived_;  // per peer; touched only by the stream worker
  std::atomic<bool> aborted_{false};
  std::atomic<bool> revoked_{false};
  // When run() next looks at the root between calls (steady clock, ns since epoch).
  std::atomic<int64_t> nextRootCheckNs_{0};
  // Tasks begun (API threads) and ended (stream threads), each on a cache line of its own.
  alignas(64) std::atomic<uint64_t> begun_{0};
  alignas(64) std::atomic<uint64_t> ended_{0};
  std::atomic<int> idleWaiters_{0};  // threads in waitIdle(): endTask then notifies idle_
  alignas(64) mutable std::mutex mu_;
  std::condition_variable idle_;
  std::atomic<bool> failed_{false};  // asyncError_ is set (read without mu_)
  Status asyncError_;
};

}  // namespace trnccl::comm
