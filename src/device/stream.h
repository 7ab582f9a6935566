// A stream: tasks executed in FIFO order by one worker thread.
//
// Why a thread per stream: it gives CUDA's semantics for free — work on one stream is ordered,
// work on different streams overlaps, and the host returns from enqueue at once. The worker
// sleeps on a condition variable when the queue is empty, so idle streams cost no CPU; like
// every wait in trnccl it first polls briefly (common/wait.h Backoff), and so do synchronize()
// and waitFor(). A thread wake-up costs ~10 us on our 2-core VMs: without the poll, a host
// thread issuing collectives one by one woke the worker for each (5 futex calls per call).
//
// A task that returns an error puts the stream in a sticky error state: every later task is
// skipped (its onSkip callback, if any, is told why) and synchronize() reports the error.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "common/status.h"
#include "device/device_api.h"

namespace trnccl::device {

class Stream {
 public:
  // Called instead of the task when the stream is already in error, so that work which others
  // wait for (an event record) can report the failure rather than never complete.
  using SkipHandler = std::function<void(const Status&)>;

  explicit Stream(int device);
  // Drains the queue (tasks still run, in order), then joins the worker.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }

  // Appends a task; returns its sequence number (0, 1, ...) at once.
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

 private:
  struct Work {
    Task task;
    SkipHandler onSkip;
  };

  void workerLoop();
  void runOne(Work& work);
  // Polls without the lock until `done()` or the backoff says to block; true if done.
  template <typename Done>
  static bool pollBriefly(Done done);

  const int device_;
  std::mutex mutex_;
  std::condition_variable workReady_;  // worker waits: queue non-empty or stopping
  std::condition_variable progress_;   // waiters: completed_ advanced
  std::deque<Work> queue_;
  // Written under mutex_; atomic so that the brief polls can read them without it.
  std::atomic<uint64_t> enqueued_{0};   // tasks ever enqueued
  std::atomic<uint64_t> completed_{0};  // tasks run or skipped, a prefix of the enqueued ones
  bool stopping_ = false;
  Status error_;        // sticky: the first failed task's Status
  std::thread worker_;  // last: starts once the state above is constructed
};

}  // namespace trnccl::device

// The C API's opaque handle is the stream itself, so a trnrtStream_t converts to Stream*
// without a lookup.
struct trnrtStream final : trnccl::device::Stream {
  using Stream::Stream;
};
