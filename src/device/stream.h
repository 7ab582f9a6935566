// A stream: tasks executed in FIFO order, by the stream's worker thread or by a host thread
// that waits for them.
//
// Why a thread per stream: it gives CUDA's semantics for free — work on one stream is ordered,
// work on different streams overlaps, and the host returns from enqueue at once.
//
// The hand-off is the cheapest we found to be correct: a preallocated ring of task slots
// (enqueue moves the task and its captures into a slot: no allocation), a small lock among
// producers only (an atomic flag: one exchange and one store when uncontended, where a
// std::mutex cost ~55 instructions; a producer that finds it taken waits like every wait here,
// polling briefly, then sleeping on a doorbell the holder rings when it leaves), release/acquire
// counters (`enqueued_`, `completed_`) that the worker and the waiters poll, and a futex doorbell
// on each side that is rung only when somebody announced they sleep on it (common/sleeper.h). A
// thread wake-up costs ~10 us on our 2-core VMs: a host thread issuing collectives one by one used
// to pay a condition variable signal, a mutex hand-off and a deque node per call. Like every wait
// in trnccl, the worker and the waiters poll briefly (Backoff) before they block, and their sleeps
// are bounded. When the ring is full, enqueue waits for the worker to free a slot (CUDA's launch
// queue does the same).
//
// The waiter runs the work (as a CPU runtime would): a host thread blocked in synchronize() or
// waitFor() does not sit idle while the worker runs its tasks; it takes the stream's run token
// (`running_`) and runs the pending tasks itself, in order, up to the one it waits for, then
// hands the token back. Whoever holds the token owns the next-task index (`completed_`), so at
// any moment exactly one thread runs the stream's tasks and FIFO order holds. A waiter that
// wants the token says so (`wanting_`): the worker gives the token up after its current task
// and, while a waiter holds or wants it, sleeps without spinning until the token is released
// or new work arrives. This halves the busy threads of a rank that issues collectives and then
// synchronizes (the caller's and the worker's become one, as in an MPI rank). What stays as in
// CUDA: enqueue returns at once and never runs a task (a send enqueued before its matching
// receive on another stream cannot deadlock); query() runs nothing; a thread that is itself
// running a stream's task only waits (no nesting); while a task runs on a waiter's thread,
// current() is the stream and the current device the stream's, and both are restored after.
//
// A sleeping waiter also publishes the completion count it needs (`wakeAt_`), and the thread
// running the tasks rings only once it is reached: a producer blocked on a full ring sleeps
// until a quarter of the ring is free, not until the next slot is (a wake-up per task would
// cost a syscall and the core a context switch for every task of a benchmark loop).
// So a task must never enqueue onto its own stream (it would wait for itself once the ring is
// full): like CUDA's host functions, tasks make no runtime calls on their stream.
//
// Deferred start (issue 14, session 16): a host thread that synchronizes right after each
// enqueue (a blocking-style loop: nccl-tests -z 2, torch's work.wait() after every
// all_reduce) used to pay a thread hand-off per call: the enqueue rang the worker, and either
// the worker ran the task while the caller slept until it was done, or the caller ran it
// while the worker woke up for nothing and parked again (~1.7 futex calls per call, 6 us
// instead of 0.45 for a 2-rank 8-byte all-reduce). Once waits keep following enqueues closely
// (kSyncStreak waits in a row, each after at most kSyncedBatch new tasks, all enqueued by the
// waiting thread, which enqueued nowhere else in between), the stream defers
// the start: an enqueue no longer rings a sleeping worker, and the caller's wait runs the
// task, as an MPI rank would. The worker then sleeps at most kDeferredBound at a time: a task
// still pending at two of its wake-ups in a row (nobody came to wait for it) is run and ends
// the mode, so a task never waits more than twice that bound to start. The mode also ends
// when an enqueue finds kSyncedBatch earlier tasks still waiting to start, when a waiter leaves
// tasks behind, when someone waits for the stream without running it (kick(): query(), a task of
// another stream, an event), and after kQuietWakes wake-ups with no waits.
//
// A task that returns an error (or throws) puts the stream in a sticky error state: every
// later task is skipped (its onSkip callback, if any, is told why) and synchronize() reports
// the error.
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
  uint64_t enqueue(Task&& task, SkipHandler&& onSkip = nullptr);
  // enqueue() in two halves (device::enqueueInPlace builds the task in its slot): claim() takes
  // the producers' lock and waits for a free slot, whose task and onSkip are empty; publish()
  // hands that slot to the runner and releases the lock. Returns the task's sequence number.
  TaskSlot claim();
  uint64_t publish(uint64_t sequence);
  // Blocks until every task enqueued before the call has run or been skipped, running them on
  // the calling thread when it can take the run token; returns the sticky error, if any.
  Status synchronize();
  // Blocks until task `sequence` has run or been skipped (as synchronize(), running the tasks
  // up to it); returns the sticky error, if any.
  Status waitFor(uint64_t sequence);
  // kOk when idle, kInProgress while tasks are pending, the sticky error once failed.
  Status query();

  // Somebody waits for the stream's work without running it (query(), an event, a task of
  // another stream): a start deferred for a synchronizing caller (above) happens now.
  void kick();
  // Whether enqueues currently defer the start (above); for tests.
  bool defersStart() const { return deferStart_.load(std::memory_order_acquire); }

  // Threads in synchronize()/waitFor() that hold or want the run token (tests use it to know
  // that a waiter is there before they let a task finish).
  uint32_t waiters() const { return wanting_.load(std::memory_order_acquire); }

  // The stream whose task the calling thread is running (its worker, or a waiter while it runs
  // the stream's tasks), or nullptr.
  static Stream* current();

  // Who ran the stream's tasks, for the latency notes (issue 14): kept by the token's holder,
  // logged at destruction (TRNCCL_DEBUG=INFO TRNCCL_DEBUG_SUBSYS=DEVICE).
  struct Stats {
    uint64_t tasks = 0;       // run or skipped
    uint64_t byWaiters = 0;   // of them, on a thread in synchronize()/waitFor()
    uint64_t takeovers = 0;   // times a waiter took the token from a worker that ran
    uint64_t takeoverNs = 0;  // their waits from asking for the token to holding it
    uint64_t fullWaits = 0;   // enqueues that waited for a slot (each until a quarter is free)
    uint64_t deferrals = 0;   // times the start began to be deferred (above)
  };
  Stats stats() const;

  // Task slots in the ring: enqueue waits when this many are pending.
  static constexpr uint64_t kSlots = 1024;

 private:
  struct Work {
    Task task;
    SkipHandler onSkip;
  };

  void workerLoop();
  // The sticky error, or kOk.
  Status stickyError() const;
  // The worker may run: work is pending, and no waiter holds or wants the token.
  bool workerMayRun() const;
  // The worker's sleep while a waiter holds or wants the token: no polling, bounded.
  void parkWorker();
  // The waiter's side: runs tasks up to `count` when it can take the token, else waits.
  void runAsWaiter(uint64_t count);
  bool tryTakeToken();
  void releaseToken();
  // With the token: runs tasks in order up to `count` (exclusive); the worker stops early
  // (`yieldToWaiters`) once a waiter wants the token.
  // Returns how many it ran.
  uint64_t runTasks(uint64_t count, bool yieldToWaiters);
  void runOne(Work& work);
  // Waits until `count` tasks completed; asks the worker to ring once `wakeAt` (>= count) did.
  void waitCompleted(uint64_t count, uint64_t wakeAt);
  // A producer on a full ring: sleeps (no polling) until `count` tasks completed, asking to be
  // woken once `wakeAt` (>= count) did.
  void waitForRoom(uint64_t count, uint64_t wakeAt);
  // After completed_ reached `count`: rings doneBell_ when a sleeping waiter asked for it.
  void wakeWaiters(uint64_t count);
  // The producers' lock (producing_): taken, or waited for (polls, then sleeps on
  // producerBell_).
  void lockProducers();
  // Deferred start (above): a waiter's arrival counts toward the mode; publish() asks whether
  // task `sequence` may be left to its caller; the worker's bounded sleep while deferring; the
  // mode's end (a fence after it pairs with publish()'s: one of them sees the other).
  void noteWaiter();
  bool deferring(uint64_t sequence);
  void sleepDeferred();
  void stopDeferring();

  // The producers' and the runner's words live on cache lines of their own: on one line, every
  // enqueue and every completed task took the line from the other thread's core (issue 14).
  static constexpr size_t kLine = 64;

  const int device_;
  std::unique_ptr<Work[]> slots_;  // task i lives in slots_[i % kSlots]
  std::atomic<bool> stopping_{false};
  // Producers: tasks ever enqueued (written under the producers' lock, producing_).
  alignas(kLine) std::atomic<bool> producing_{false};  // the lock, among producers only
  std::atomic<uint64_t> enqueued_{0};
  uint64_t completedSeen_ = 0;  // completed_ as the producers last read it (producing_)
  // The token's holder: tasks run or skipped (a prefix of the enqueued ones; the index of the
  // next task to run).
  alignas(kLine) std::atomic<uint64_t> completed_{0};
  std::atomic<bool> running_{false};  // the run token: held by whoever runs tasks
  // Waiters: those that want (or hold) the token, and the lowest completion count a sleeping
  // waiter asked to be woken at (UINT64_MAX: none).
  alignas(kLine) std::atomic<uint32_t> wanting_{0};
  std::atomic<uint64_t> wakeAt_{UINT64_MAX};
  // Deferred start: the mode (read by every publish), the waits in a row that followed their
  // enqueues closely, and enqueued_ at the last wait (waiters write both, racing harmlessly).
  std::atomic<bool> deferStart_{false};
  std::atomic<uint32_t> syncStreak_{0};
  std::atomic<uint64_t> lastWaitEnqueued_{0};
  std::atomic<uint64_t> lastWaitThreadEnqueues_{0};  // the waiting thread's own enqueues then
  // The worker's own while deferring: completed_ when it last woke to a task waiting to start
  // (UINT64_MAX: none), and its wake-ups in a row that saw no wait.
  uint64_t pendingAtWake_ = UINT64_MAX;
  uint64_t quietMark_ = 0;
  uint32_t quietWakes_ = 0;
  alignas(kLine) Doorbell workBell_;  // the worker sleeps here: producers and leaving waiters ring
  alignas(kLine) Doorbell doneBell_;  // waiters sleep here: the token's holder wakes them
  Doorbell producerBell_;  // producers waiting for producing_ sleep here (rarely: contention)
  // Stats, relaxed: the token's holder writes them, stats() reads them.
  alignas(kLine) std::atomic<uint64_t> byWaiters_{0};
  std::atomic<uint64_t> takeovers_{0};
  std::atomic<uint64_t> takeoverNs_{0};
  std::atomic<uint64_t> fullWaits_{0};  // written under producing_
  std::atomic<uint64_t> deferrals_{0};
  mutable std::mutex errorMutex_;
  Status error_;  // sticky: the first failed task's Status (written by the token's holder)
  // error_ is set: readers of a healthy stream (every synchronize) skip errorMutex_.
  std::atomic<bool> failed_{false};
  std::thread worker_;  // last: starts once the state above is constructed
};

}  // namespace trnccl::device

// The C API's opaque handle is the stream itself, so a trnrtStream_t converts to Stream*
// without a lookup.
struct trnrtStream final : trnccl::device::Stream {
  using Stream::Stream;
};
