// Runs a schedule over the transports: the emulated device's work for one collective call.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/wait.h"
#include "schedule/schedule.h"

namespace trnccl::transport {
class Connection;  // transports/core/transport.h: only the executor's sources use transports
}  // namespace trnccl::transport

namespace trnccl::schedule {

struct ExecContext {
  int rank = 0;
  std::vector<transport::Connection*> conns;  // by peer rank; nullptr for self
  Doorbell* bell = nullptr;                   // rung by the transports when they have news
  Deadline deadline = Deadline::never();
  const std::atomic<bool>* abortFlag = nullptr;
  uint64_t seq = 0;  // collective sequence number of this call (goes into message tags)
  // Per-peer message counters of point-to-point schedules (owned by the communicator).
  std::vector<uint64_t>* p2pSent = nullptr;
  std::vector<uint64_t>* p2pReceived = nullptr;
  std::string what;  // "allreduce #12 (ring)" for error messages
  // Checked with the peers while stuck: an error once the communicator failed elsewhere (e.g.
  // the bootstrap root reports a rank gone that this rank does not talk to directly).
  std::function<Status()> health;
};

// Executes `schedule` step by step (steps joined by withNext together). Transfers stream: a
// forwarding primitive sends each piece as soon as it was received and reduced. A step is over
// once everything was received and everything was handed to the transport; before returning,
// execute() waits until the transports no longer need any source buffer. The schedule's scratch
// space (Schedule::allocScratch) is backed by memory for the duration of the call.
//
// Rule for algorithms: a region handed to a send must not be written by a later step of the
// same schedule unless that write is causally after the peer received it (true of the ring).
Status execute(const Schedule& schedule, const ExecContext& ctx);

// Tag of the index-th message on one directed connection within collective `seq`.
constexpr uint64_t messageTag(uint64_t seq, uint32_t index) { return (seq << 24) | index; }
// Tag of the n-th point-to-point message between two ranks (one direction).
constexpr uint64_t p2pTag(uint64_t n) { return (uint64_t{1} << 63) | n; }

}  // namespace trnccl::schedule
