// Liveness of a network link: the library's own, not TCP keepalive's (2 hours by default).
//
// A link that is cut without a reset (cable out, interface down, a partition, a peer stopped
// by SIGSTOP) leaves a socket or a libfabric connection that never errors: the kernel keeps
// retransmitting for up to ~15 minutes, and a receiver waits for bytes that never come. So
// each network transport (tcp, ofi) sends a small heartbeat to every peer every interval,
// whatever the executor is doing, and fails a link that has carried nothing at all (data or
// heartbeat) for the liveness timeout T:
//
//   TRNCCL_LIVENESS_TIMEOUT_MS  T, default 30000 (0: off, only the collective timeout is left).
//                               About NCCL's own bound for a dead InfiniBand link
//                               (NCCL_IB_TIMEOUT x NCCL_IB_RETRY_CNT, ~30 s), an order below
//                               the collective timeout, and far above the retransmission
//                               stalls a lossy but working link shows (30 % random loss,
//                               tests/netfault).
//
// A failed link is a kTimeout error naming the peer, within T + one interval of the last
// byte heard while idle, or within T + 50 ms (the executor's peer check) while a collective
// waits on it. A heartbeat that meets a reset connection fails the link at once. Ranks publish
// their T at setup and each pair sends heartbeats often enough for the smaller one, so ranks that
// set T differently never fail each other early.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "common/status.h"
#include "common/wait.h"

namespace trnccl::transport {

inline constexpr std::chrono::milliseconds kDefaultLivenessTimeout{30000};

// TRNCCL_LIVENESS_TIMEOUT_MS (0: off); what a rank publishes at setup.
std::chrono::milliseconds livenessTimeout();

// How often to send heartbeats on a link whose ends expect them within `mine` and `theirs`
// (0: that end checks nothing): an eighth of the smaller nonzero one, within [10 ms, 500 ms]
// (so a reset shows within half a second on an idle link too); zero when neither end checks.
std::chrono::milliseconds heartbeatInterval(std::chrono::milliseconds mine,
                                            std::chrono::milliseconds theirs);

// When a link last carried anything. Written by whichever thread receives, read by any.
class LastHeard {
 public:
  LastHeard() { touch(); }
  void touch() { at_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed); }
  Clock::duration silence() const {
    return Clock::now().time_since_epoch() - Clock::duration(at_.load(std::memory_order_relaxed));
  }

 private:
  std::atomic<Clock::rep> at_{0};
};

// The error of a link silent for longer than `timeout` (0: never), else OK. `transport` and
// `where` name the link: "tcp", "198.51.100.2:41234".
Status checkLiveness(const LastHeard& heard, std::chrono::milliseconds timeout,
                     std::string_view transport, int peer, std::string_view where);

}  // namespace trnccl::transport
