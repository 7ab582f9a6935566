// An event: a point in a stream's work that the host or other streams can wait for.
//
// Each record() bumps a generation; the task it enqueues completes that generation and stamps
// the time. Waiters capture the generation current when they start waiting, so a re-record
// does not move the goalposts of an earlier trnrtStreamWaitEvent. A never-recorded event
// (generation 0) is complete, as in CUDA. If the recording stream is already in error the
// record is skipped and the event completes as failed, so that waiters fail instead of hang.
//
// Lock-free on the paths a caller times: record is one atomic increment and an enqueue, query
// and a successful synchronize read atomics, and a waiter polls briefly, then sleeps on a
// doorbell that the completing worker rings only when a sleeper announced itself
// (common/sleeper.h), bounded like every wait. Completions serialize among themselves (records
// on several streams may complete concurrently, and the latest generation wins), and the
// message of a failed record is read under that lock: both are off the fast path.
//
// A host thread blocked in synchronize() runs the recording stream's pending tasks up to the
// record itself (Stream::waitFor: the waiter runs the work, same rules), instead of sleeping
// while the stream's worker runs them. The event remembers the stream and the task of its
// latest record for that, until the record completes; so, as with trnrtStreamSynchronize, the
// stream must not be destroyed while another thread waits on an event recorded on it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

#include "common/status.h"
#include "common/wait.h"

namespace trnccl::device {

class Stream;

// Owned through shared_ptr: enqueued records and waits keep the event alive, so destroying
// the handle while they are pending is safe (CUDA allows it).
class Event : public std::enable_shared_from_this<Event> {
 public:
  using Clock = std::chrono::steady_clock;

  // Enqueues the record on `stream`; returns the generation it will complete.
  uint64_t record(Stream& stream);
  // The generation of the latest record() (0: never recorded).
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Blocks until `generation` has completed; returns the failure of the record, if any.
  Status waitFor(uint64_t generation);
  // The host's wait for the latest record (trnrtEventSynchronize): runs the recording
  // stream's tasks up to the record when it can (Stream::waitFor), then waitFor().
  Status synchronize();
  // kOk when the latest record completed, kInProgress before, the failure if it failed.
  Status query() const;
  // The time the latest record completed; an error when it did not (yet).
  Result<Clock::time_point> timestamp() const;

 private:
  void complete(uint64_t generation, Status status);
  // kOk, or the failure of the latest completed record.
  Status outcome() const;

  std::atomic<uint64_t> generation_{0};  // records issued
  std::atomic<uint64_t> completed_{0};   // highest generation completed
  // Of generation completed_, written before completed_ is published.
  std::atomic<Clock::rep> stamp_{0};
  std::atomic<bool> failed_{false};
  mutable std::mutex completeMutex_;  // among completions; guards failure_
  Status failure_;
  Doorbell bell_;  // waiters sleep here; complete() rings announced sleepers
  // The latest record's stream and task, for synchronize(); stream null once it completed.
  struct Recorded {
    uint64_t generation = 0;
    Stream* stream = nullptr;
    uint64_t sequence = 0;
  };
  // Starts the recording stream's deferred tasks (Stream::kick) when `generation` is its record.
  void kickRecorder(uint64_t generation) const;
  mutable std::mutex recordMutex_;  // guards recorded_ (never held with completeMutex_)
  Recorded recorded_;
};

}  // namespace trnccl::device
