// A stream: tasks executed in FIFO order by one worker thread.
//
// Why a thread per stream: it gives CUDA's semantics for free — work on one stream is ordered,
// work on different streams overlaps, and the host returns from enqueue at once.
//
// The hand-off is the cheapest we found to be correct: a preallocated ring of task slots
// (enqueue moves the task and its captures into a slot: no allocation), a small lock among
// producers only, release/acquire counters (`enqueued_`, `completed_`) that the worker and the
// waiters poll, and a futex doorbell on each side that is rung only when somebody announced
// they sleep on it (common/sleeper.h). A thread wake-up costs ~10 us on our 2-core VMs: a
// host thread issuing collectives one by one used to pay a condition variable signal, a mutex
// hand-off and a deque node per call. Like every wait in trnccl, the worker and the waiters
// poll briefly (Backoff) before they block, and their sleeps are bounded. When the ring is
// full, enqueue waits for the worker to free a slot (CUDA's launch queue does the same).
//
// A sleeping waiter also publishes the completion count it needs (`wakeAt_`), and the worker
// rings only once it is reached: a producer blocked on a full ring sleeps until a quarter of
// the ring is free, not until the next slot is (a wake-up per task would cost the worker a
// syscall and the core a context switch for every task of a benchmark loop).
// So a task must never enqueue onto its own stream (the worker would wait for itself once the
// ring is full): like CUDA's host functions, tasks make no runtime calls on their stream.
//
// A task that returns an error puts the stream in a sticky error state: every later task is
// skipped (its onSkip callback, if any, is told why) and synchronize() reports the error.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "common/status.h"
#include "common/wait.h"
#include "device/device_api.h"

namespace trnccl::device {

class Stream {
 public:
  explicit Stream(int device);
  // Drains the queue (tasks still run, in order), then joins the worker.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }

  // Appends a task; returns its sequence number (0, 1, ...) at once. `onSkip` is called
  // instead of the task when the stream is already in error, so that work which others wait
  // for (an event record) can report the failure rather than never complete.
  uint64_t enqueue(Task task, SkipHandler onSkip = nullptr);
  // Blocks until every task enqueued before the call has run or been skipped; returns the
  // stream's sticky error, if any.
  Status synchronize();
  // Blocks until task `sequence` has run or been skipped; returns the sticky error, if any.
  Status waitFor(uint64_t sequence);
  // kOk when idle, kInProgress while tasks are pending, the sticky error once failed.
  Status query();

  // The stream whose worker is the calling thread, or nullptr on other threads.
  static Stream* current();

  // Task slots in the ring: enqueue waits when this many are pending.
  static constexpr uint64_t kSlots = 1024;

 private:
  struct Work {
    Task task;
    SkipHandler onSkip;
  };

  void workerLoop();
  void runOne(Work& work);
  // Waits until `count` tasks completed; asks the worker to ring once `wakeAt` (>= count) did.
  void waitCompleted(uint64_t count, uint64_t wakeAt);
  // After completed_ reached `count`: rings doneBell_ when a sleeping waiter asked for it.
  void wakeWaiters(uint64_t count);

  const int device_;
  std::unique_ptr<Work[]> slots_;  // task i lives in slots_[i % kSlots]
  std::mutex enqueueMutex_;        // among producers only
  // Tasks ever enqueued (written under enqueueMutex_) and tasks run or skipped (a prefix of
  // them, written by the worker).
  std::atomic<uint64_t> enqueued_{0};
  std::atomic<uint64_t> completed_{0};
  // The lowest completion count a sleeping waiter asked to be woken at (UINT64_MAX: none).
  std::atomic<uint64_t> wakeAt_{UINT64_MAX};
  std::atomic<bool> stopping_{false};
  Doorbell workBell_;  // the worker sleeps here: producers wake it
  Doorbell doneBell_;  // waiters sleep here: the worker wakes them
  mutable std::mutex errorMutex_;
  Status error_;        // sticky: the first failed task's Status (written by the worker)
  std::thread worker_;  // last: starts once the state above is constructed
};

}  // namespace trnccl::device

// The C API's opaque handle is the stream itself, so a trnrtStream_t converts to Stream*
// without a lookup.
struct trnrtStream final : trnccl::device::Stream {
  using Stream::Stream;
};
