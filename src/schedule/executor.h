// Runs a schedule over the transports: the emulated device's work for one collective call.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/wait.h"
#include "schedule/schedule.h"

namespace trnccl::transport {
class Connection;  // transports/core/transport.h: only the executor's sources use transports
}  // namespace trnccl::transport

namespace trnccl::schedule {

// What a running schedule is, for messages: "allreduce #12 (ring)". Formatted by str() only
// when an error or a log line needs it, so that a call builds no string on its hot path; the
// strings pointed to must outlive the run (literals, the schedule's algorithm, a task's copy).
struct CallName {
  CallName(const char* call = "", const char* algorithm = nullptr, uint64_t seq = 0)
      : call(call), algorithm(algorithm), seq(seq) {}
  const char* call;       // "allreduce", "send/recv group of 2 op(s)"
  const char* algorithm;  // collectives: adds " #seq (algorithm)"; nullptr: the call alone
  uint64_t seq;
  std::string str() const;
};

struct ExecContext {
  int rank = 0;
  std::span<transport::Connection* const> conns;  // by peer rank; nullptr for self
  Doorbell* bell = nullptr;                       // rung by the transports when they have news
  Deadline deadline = Deadline::never();
  const std::atomic<bool>* abortFlag = nullptr;
  uint64_t seq = 0;  // collective sequence number of this call (goes into message tags)
  // Per-peer message counters of point-to-point schedules (owned by the communicator).
  std::vector<uint64_t>* p2pSent = nullptr;
  std::vector<uint64_t>* p2pReceived = nullptr;
  CallName what;  // "allreduce #12 (ring)" for error messages
  // Checked with the peers while stuck: an error once the communicator failed elsewhere (e.g.
  // the bootstrap root reports a rank gone that this rank does not talk to directly).
  // A function and its argument rather than a std::function: built on every call, one cost ~40
  // instructions per call to make and destroy (issue 14). Null: none.
  Status (*health)(void* arg) = nullptr;
  void* healthArg = nullptr;
  // Memory kept between calls for the schedule's scratch space (the communicator's); null:
  // allocated for this call.
  ScratchArena* scratch = nullptr;
};

// Executes `schedule` step by step (steps joined by withNext together). Transfers stream: a
// forwarding primitive sends each piece as soon as it was received and reduced. A step is over
// once everything was received and everything was handed to the transport; before returning,
// execute() waits until the transports no longer need any source buffer. The schedule's scratch
// space (Schedule::allocScratch) is backed by memory for the duration of the call: ctx.scratch's
// block when it has one for it.
//
// Rule for algorithms: a region handed to a send must not be written by a later step of the
// same schedule unless that write is causally after the peer received it (true of the ring).
Status execute(const Schedule& schedule, const ExecContext& ctx);

// Tag of the index-th message on one directed connection within collective `seq`.
constexpr uint64_t messageTag(uint64_t seq, uint32_t index) { return (seq << 24) | index; }
// Tag of the n-th point-to-point message between two ranks (one direction).
constexpr uint64_t p2pTag(uint64_t n) { return (uint64_t{1} << 63) | n; }

}  // namespace trnccl::schedule
