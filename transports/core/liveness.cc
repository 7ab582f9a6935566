#include "transports/core/liveness.h"

#include <algorithm>

#include "common/env.h"
#include "common/log.h"

namespace trnccl::transport {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kFastestHeartbeat{10};
constexpr milliseconds kSlowestHeartbeat{500};
constexpr int kHeartbeatsPerTimeout = 8;

}  // namespace

milliseconds livenessTimeout() {
  int64_t ms = env::getInt("TRNCCL_LIVENESS_TIMEOUT_MS", kDefaultLivenessTimeout.count());
  if (ms < 0) {
    TRN_WARN(kNet, "TRNCCL_LIVENESS_TIMEOUT_MS={} is negative; using {}", ms,
             kDefaultLivenessTimeout.count());
    return kDefaultLivenessTimeout;
  }
  return milliseconds(ms);
}

milliseconds heartbeatInterval(milliseconds mine, milliseconds theirs) {
  milliseconds expected = mine.count() == 0     ? theirs
                          : theirs.count() == 0 ? mine
                                                : std::min(mine, theirs);
  if (expected.count() <= 0) return milliseconds(0);
  return std::clamp(expected / kHeartbeatsPerTimeout, kFastestHeartbeat, kSlowestHeartbeat);
}

Status checkLiveness(const LastHeard& heard, milliseconds timeout, std::string_view transport,
                     int peer, std::string_view where) {
  if (timeout.count() <= 0) return Status::ok();
  Clock::duration silence = heard.silence();
  if (silence <= timeout) return Status::ok();
  double seconds = std::chrono::duration<double>(silence).count();
  return Status(Code::kTimeout,
                fmt::format("{}: heard nothing from rank {} ({}) for {:.1f} s, not even a "
                            "heartbeat (TRNCCL_LIVENESS_TIMEOUT_MS={}): link down, network "
                            "partitioned, or the peer stopped",
                            transport, peer, where, seconds, timeout.count()),
                peer);
}

}  // namespace trnccl::transport
