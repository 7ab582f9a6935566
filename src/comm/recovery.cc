// The communicator's part of recovery (bootstrap/recovery.h): revoke, which peers failed, and
// the rendezvous of a shrink. The API's trncclCommShrink builds the new communicator from the
// id shrinkId() agrees on (src/api/shrink.cc).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "comm/communicator.h"
#include "common/log.h"

namespace trnccl::comm {
namespace {

// A live peer's kernel answers a connect at once; only an unreachable host takes this long.
constexpr std::chrono::milliseconds kProbeTimeout{1000};

// For a peer without a recovery port: on this machine, whether its process has exited.
bool processGone(const transport::PeerInfo& self, const transport::PeerInfo& peer) {
  if (peer.bootId != self.bootId || peer.pid == self.pid || peer.pid <= 0) return false;
  return ::kill(peer.pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

void Communicator::openRecoveryPort() {
  auto port = bootstrap::RecoveryPort::open(rank_);
  if (port) {
    recovery_ = std::move(*port);
    return;
  }
  TRN_WARN(kInit,
           "rank {}: no recovery port ({}): peers cannot probe this rank, and a shrink it "
           "would lead fails",
           rank_, port.status().message());
}

std::chrono::milliseconds Communicator::probeTimeout() const {
  return std::min(kProbeTimeout, config_.opTimeout);
}

void Communicator::revoke() {
  if (revoked_.exchange(true)) return;
  TRN_WARN(kInit, "rank {}: communicator {:#x} revoked", rank_, commHash_);
  setAsyncError(Status(Code::kRemoteError,
                       fmt::format("rank {} revoked the communicator (trncclCommRevoke)", rank_)));
  aborted_.store(true);
  bell_.ring();
  if (bootstrap_) bootstrap_->revoke();
}

void Communicator::poll() {
  if (recovery_) recovery_->drain();
  if (!asyncError().isOk() || !bootstrap_) return;
  if (Status s = bootstrap_->checkRoot(); !s) setAsyncError(s);
}

std::vector<int> Communicator::failedRanks() {
  if (recovery_) recovery_->drain();
  std::vector<bootstrap::RecoveryAddress> ask = recoveryAddresses_;
  ask[rank_] = {};  // this rank is alive
  std::vector<bootstrap::Liveness> live = bootstrap::probe(ask, probeTimeout());
  std::vector<int> failed;
  for (int r = 0; r < nranks_; ++r) {
    bool gone = live[r] != bootstrap::Liveness::kAlive ||
                (!ask[r].valid() && r != rank_ && processGone(peers_[rank_], peers_[r]));
    if (!gone) continue;
    TRN_INFO(kInit, "rank {}: peer rank {} is {}", rank_, r, bootstrap::describe(live[r]));
    failed.push_back(r);
  }
  return failed;
}

Result<bootstrap::UniqueId> Communicator::shrinkId(const std::vector<int>& excluded,
                                                   Deadline deadline) {
  std::vector<int> survivors;
  for (int r = 0; r < nranks_; ++r) {
    if (!std::binary_search(excluded.begin(), excluded.end(), r)) survivors.push_back(r);
  }
  const int leader = survivors.front();
  bootstrap::ShrinkAsk mine{.parentMagic = commHash_, .rank = rank_, .excluded = excluded};
  if (leader != rank_) {
    const bootstrap::RecoveryAddress& at = recoveryAddresses_[leader];
    if (!at.valid()) {
      return systemError(
          "trncclCommShrink: rank {} leads the shrink (the first rank not "
          "excluded) but could not open a recovery port at init (see its log)",
          leader);
    }
    bootstrap::Liveness live = bootstrap::probe({at}, probeTimeout()).front();
    if (live != bootstrap::Liveness::kAlive) {
      return Status(Code::kRemoteError,
                    fmt::format("trncclCommShrink: rank {} leads the shrink (the first rank not "
                                "excluded) but is {}: exclude it too (trncclCommGetFailedRanks)",
                                leader, bootstrap::describe(live)),
                    leader);
    }
    return bootstrap::askToShrink(at, leader, mine, deadline);
  }
  if (!recovery_) {
    return systemError(
        "trncclCommShrink: rank {} leads the shrink (the first rank not "
        "excluded) but could not open a recovery port at init",
        rank_);
  }
  // While waiting for the others, the leader probes those not heard from: one that died
  // meanwhile fails the shrink at once instead of at the deadline.
  auto check = [this](const std::vector<int>& missing) {
    std::vector<bootstrap::RecoveryAddress> ask;
    for (int r : missing) ask.push_back(recoveryAddresses_[r]);
    std::vector<bootstrap::Liveness> live = bootstrap::probe(ask, probeTimeout());
    for (size_t i = 0; i < missing.size(); ++i) {
      if (live[i] == bootstrap::Liveness::kAlive) continue;
      return Status(Code::kRemoteError,
                    fmt::format("trncclCommShrink: rank {} is not in excludeRanksList but is "
                                "{}: exclude it (trncclCommGetFailedRanks)",
                                missing[i], bootstrap::describe(live[i])),
                    missing[i]);
    }
    return Status::ok();
  };
  std::vector<int> expected(survivors.begin() + 1, survivors.end());
  return recovery_->lead(mine, expected, deadline, check,
                         [] { return bootstrap::createUniqueId(/*useCommIdEnv=*/false); });
}

}  // namespace trnccl::comm
