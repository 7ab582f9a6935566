// An event: a point in a stream's work that the host or other streams can wait for.
//
// Each record() bumps a generation; the task it enqueues completes that generation and stamps
// the time. Waiters capture the generation current when they start waiting, so a re-record
// does not move the goalposts of an earlier trnrtStreamWaitEvent. A never-recorded event
// (generation 0) is complete, as in CUDA. If the recording stream is already in error the
// record is skipped and the event completes as failed, so that waiters fail instead of hang.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "common/status.h"

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
  uint64_t generation() const;
  // Blocks until `generation` has completed; returns the failure of the record, if any.
  Status waitFor(uint64_t generation);
  // kOk when the latest record completed, kInProgress before, the failure if it failed.
  Status query() const;
  // The time the latest record completed; an error when it did not (yet).
  Result<Clock::time_point> timestamp() const;

 private:
  void complete(uint64_t generation, Status status);

  mutable std::mutex mutex_;
  std::condition_variable completedCv_;
  uint64_t generation_ = 0;  // records issued
  uint64_t completed_ = 0;   // highest generation completed
  Clock::time_point stamp_{};
  Status failure_;  // of generation completed_
};

}  // namespace trnccl::device
