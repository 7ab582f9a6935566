#include "device/stream.h"

#include <chrono>
#include <exception>
#include <utility>

#include "common/log.h"
#include "common/sleeper.h"
#include "common/thread.h"
#include "common/wait.h"
#include "device/device.h"

namespace trnccl::device {
namespace {

thread_local Stream* tlsCurrentStream = nullptr;
// Tasks this thread enqueued, on any stream: a wait counts toward deferring a stream's start
// only if all of them since the thread's previous wait there went to that stream (one thread
// issuing on several streams, then waiting for each, needs their workers: the first stream's
// task, run by the waiter, may wait for the others').
thread_local uint64_t tlsEnqueues = 0;

// A waiter running a stream's tasks: the stream (and, per task, its device) is current for the
// scope; the thread's own are restored after.
class RunningAs {
 public:
  explicit RunningAs(Stream* stream) : stream_(tlsCurrentStream), device_(currentDevice()) {
    tlsCurrentStream = stream;
  }
  ~RunningAs() {
    tlsCurrentStream = stream_;
    setCurrentDevice(device_);
  }
  RunningAs(const RunningAs&) = delete;
  RunningAs& operator=(const RunningAs&) = delete;

 private:
  Stream* const stream_;
  const int device_;
};

}  // namespace

// Sleeps are bounded like every wait in trnccl; a wake-up is normally a ring.
constexpr auto kMaxSleep = std::chrono::milliseconds(100);
// Deferred start (stream.h): waits in a row, each at most kSyncedBatch enqueues after the last,
// that begin the mode; the worker's longest sleep in it (a task left to a caller who does not
// come starts within two of them); its wake-ups without a wait that end it (~10 ms).
constexpr uint32_t kSyncStreak = 8;
constexpr uint64_t kSyncedBatch = 4;
constexpr auto kDeferredBound = std::chrono::microseconds(500);
constexpr uint32_t kQuietWakes = 20;

Stream::Stream(int device)
    : device_(device), slots_(new Work[kSlots]), worker_(startThread([this] { workerLoop(); })) {}

Stream::~Stream() {
  stopping_.store(true, std::memory_order_seq_cst);
  workBell_.ring();
  worker_.join();
  const Stats s = stats();
  if (s.tasks != 0) {
    TRN_INFO(kDevice,
             "stream of device {}: {} tasks, {} run by waiting threads, which took the token "
             "{} times from a thread running tasks ({:.1f} us from asking to holding it, in all); "
             "{} enqueues waited for room; the start deferred {} times",
             device_, s.tasks, s.byWaiters, s.takeovers, s.takeoverNs / 1e3, s.fullWaits,
             s.deferrals);
  }
}

Stream::Stats Stream::stats() const {
  Stats s;
  s.tasks = completed_.load(std::memory_order_acquire);
  s.byWaiters = byWaiters_.load(std::memory_order_relaxed);
  s.takeovers = takeovers_.load(std::memory_order_relaxed);
  s.takeoverNs = takeoverNs_.load(std::memory_order_relaxed);
  s.fullWaits = fullWaits_.load(std::memory_order_relaxed);
  s.deferrals = deferrals_.load(std::memory_order_relaxed);
  return s;
}

Stream* Stream::current() { return tlsCurrentStream; }

void Stream::waitCompleted(uint64_t count, uint64_t wakeAt) {
  kick();  // a task of another stream waits here: it will not run ours
  sleepUntil(
      doneBell_, kMaxSleep, [&] { return completed_.load(std::memory_order_acquire) >= count; },
      [&] {
        uint64_t lowest = wakeAt_.load(std::memory_order_relaxed);
        while (wakeAt < lowest && !wakeAt_.compare_exchange_weak(lowest, wakeAt)) {
        }
      });
}

void Stream::waitForRoom(uint64_t count, uint64_t wakeAt) {
  // No polling: kSlots tasks are ahead of this one, so there is nothing to gain from a spin or
  // a yield, and they cost the worker its core. Polling for one free slot made the producer of
  // a benchmark loop take every slot as it freed, yielding in between: on 2 cores each rank's
  // caller then used ~45 % of a core next to its worker, and while the scheduler had both
  // ranks' workers on one core and a caller alone on the other, the first 2,000 8-byte
  // all-reduces of a 2-rank run took 4-6 us each instead of 0.4 (issue 14, session 9).
  // Woken at `wakeAt`, or by any other ring of doneBell_ (then a free slot is enough).
  while (completed_.load(std::memory_order_acquire) < count) {
    const uint32_t seen = doneBell_.snapshot();
    uint64_t lowest = wakeAt_.load(std::memory_order_relaxed);
    while (wakeAt < lowest && !wakeAt_.compare_exchange_weak(lowest, wakeAt)) {
    }
    DoorbellSleeper sleeper(doneBell_);
    if (completed_.load(std::memory_order_acquire) >= count) return;
    sleeper.sleep(seen, kMaxSleep);
  }
}

void Stream::wakeWaiters(uint64_t count) {
  // Pairs with the fence of the waiter's announcement (sleeper.h): either the waiter's last
  // poll sees `count`, or this load sees its wakeAt_.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (wakeAt_.load(std::memory_order_relaxed) > count) return;
  // Everybody sleeping wakes; whoever still waits for more asks again before sleeping.
  wakeAt_.store(UINT64_MAX, std::memory_order_seq_cst);
  Doorbell::ring(doneBell_.word());
}

void Stream::lockProducers() {
  // Another producer holds it for a slot's move (or, on a full ring, until a quarter of the
  // ring is free): poll, then sleep until it leaves.
  sleepUntil(producerBell_, kMaxSleep, [&] {
    return !producing_.load(std::memory_order_relaxed) &&
           !producing_.exchange(true, std::memory_order_acquire);
  });
}

uint64_t Stream::enqueue(Task&& task, SkipHandler&& onSkip) {
  TaskSlot slot = claim();
  *slot.task = std::move(task);
  *slot.onSkip = std::move(onSkip);
  return publish(slot.sequence);
}

TaskSlot Stream::claim() {
  if (producing_.exchange(true, std::memory_order_acquire)) lockProducers();
  const uint64_t sequence = enqueued_.load(std::memory_order_relaxed);
  // Full: wait for the worker to free the slot (it never waits for the producers), and when
  // sleeping, for a quarter of the ring. The runner's count is read only when the count seen
  // last does not free the slot: its cache line stays with the runner's core.
  if (sequence >= completedSeen_ + kSlots) {
    const uint64_t need = sequence - kSlots + 1;
    if (completed_.load(std::memory_order_acquire) < need) {
      fullWaits_.fetch_add(1, std::memory_order_relaxed);
      waitForRoom(need, sequence - kSlots + kSlots / 4);
    }
    completedSeen_ = completed_.load(std::memory_order_acquire);
  }
  Work& slot = slots_[sequence % kSlots];
  return {&slot.task, &slot.onSkip, sequence};
}

uint64_t Stream::publish(uint64_t sequence) {
  ++tlsEnqueues;
  enqueued_.store(sequence + 1, std::memory_order_release);
  producing_.store(false, std::memory_order_release);
  // One fence for both doorbells (wakeIfSleeping's): it orders the task's publication and the
  // lock's release before the loads of their sleepers, and pairs with the fence after each
  // sleeper's announcement (common/sleeper.h).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (producerBell_.word()->sleepers.load(std::memory_order_relaxed) != 0) producerBell_.ring();
  // Asked first: an enqueue behind a task still waiting to start ends the mode either way.
  const bool leftToCaller = deferring(sequence);
  if (!leftToCaller && workBell_.word()->sleepers.load(std::memory_order_relaxed) != 0) {
    workBell_.ring();
  }
  return sequence;
}

Status Stream::synchronize() { return waitFor(enqueued_.load(std::memory_order_acquire) - 1); }

Status Stream::waitFor(uint64_t sequence) {
  // sequence + 1 == 0: nothing was enqueued (synchronize() of a fresh stream).
  const uint64_t count = sequence + 1;
  // A thread already running a stream's task only waits: running another stream's tasks
  // inside it could wait for work that only the outer task's stream would do.
  if (tlsCurrentStream == nullptr) {
    runAsWaiter(count);
  } else {
    waitCompleted(count, count);
  }
  return stickyError();
}

Status Stream::stickyError() const {
  if (!failed_.load(std::memory_order_acquire)) return Status::ok();
  std::lock_guard<std::mutex> lock(errorMutex_);
  return error_;
}

Status Stream::query() {
  if (Status error = stickyError(); !error.isOk()) return error;
  if (completed_.load(std::memory_order_acquire) < enqueued_.load(std::memory_order_acquire)) {
    kick();  // a caller polling query() does not run the tasks
    return Status(Code::kInProgress, "stream has pending work");
  }
  return Status::ok();
}

bool Stream::tryTakeToken() {
  return !running_.load(std::memory_order_relaxed) &&
         !running_.exchange(true, std::memory_order_seq_cst);
}

void Stream::releaseToken() {
  running_.store(false, std::memory_order_seq_cst);
  // A waiter sleeping until the token is free (the fence inside pairs with its announcement).
  wakeIfSleeping(doneBell_.word());
}

void Stream::runAsWaiter(uint64_t count) {
  noteWaiter();
  if (completed_.load(std::memory_order_acquire) >= count) return;
  wanting_.fetch_add(1, std::memory_order_seq_cst);
  // A clock read only when the token is held now (by the worker, or another waiter): a
  // take-over, counted in stats().
  const bool workerRan = running_.load(std::memory_order_acquire);
  const auto asked =
      workerRan ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  while (completed_.load(std::memory_order_acquire) < count) {
    if (tryTakeToken()) {
      if (workerRan) {
        takeovers_.fetch_add(1, std::memory_order_relaxed);
        takeoverNs_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now() - asked)
                                  .count(),
                              std::memory_order_relaxed);
      }
      {
        RunningAs running(this);
        byWaiters_.fetch_add(runTasks(count, false), std::memory_order_relaxed);
      }
      releaseToken();
      break;
    }
    // The worker finishes its current task, or another waiter runs: wait for our count or the
    // token, whichever comes first.
    sleepUntil(
        doneBell_, kMaxSleep,
        [&] {
          return completed_.load(std::memory_order_acquire) >= count ||
                 !running_.load(std::memory_order_acquire);
        },
        [&] {
          uint64_t lowest = wakeAt_.load(std::memory_order_relaxed);
          while (count < lowest && !wakeAt_.compare_exchange_weak(lowest, count)) {
          }
        });
  }
  wanting_.fetch_sub(1, std::memory_order_seq_cst);
  // The worker parked while we wanted the token: tasks after ours (or the destructor) need it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (enqueued_.load(std::memory_order_acquire) > completed_.load(std::memory_order_acquire) ||
      stopping_.load(std::memory_order_acquire)) {
    stopDeferring();  // tasks left behind are nobody's to wait for
    wakeIfSleeping(workBell_.word());
  }
}

void Stream::noteWaiter() {
  // Relaxed loads and stores: two waiters racing only blur the count, and the mode is a hint
  // (every start it defers is bounded by the worker's sleep).
  const uint64_t enqueued = enqueued_.load(std::memory_order_acquire);
  const uint64_t since = enqueued - lastWaitEnqueued_.load(std::memory_order_relaxed);
  if (since == 0) return;  // nothing new since the last wait (a second synchronize)
  const uint64_t byThisThread =
      tlsEnqueues - lastWaitThreadEnqueues_.load(std::memory_order_relaxed);
  lastWaitEnqueued_.store(enqueued, std::memory_order_relaxed);
  lastWaitThreadEnqueues_.store(tlsEnqueues, std::memory_order_relaxed);
  if (since > kSyncedBatch || byThisThread != since) {
    syncStreak_.store(0, std::memory_order_relaxed);
    return;
  }
  const uint32_t streak = syncStreak_.load(std::memory_order_relaxed) + 1;
  syncStreak_.store(streak, std::memory_order_relaxed);
  if (streak >= kSyncStreak && !deferStart_.load(std::memory_order_relaxed)) {
    deferStart_.store(true, std::memory_order_release);
    deferrals_.fetch_add(1, std::memory_order_relaxed);
    // A worker asleep in its idle or parked wait (bounds of 100 ms) moves to the mode's.
    wakeIfSleeping(workBell_.word());
  }
}

bool Stream::deferring(uint64_t sequence) {
  if (!deferStart_.load(std::memory_order_relaxed)) return false;
  // More tasks wait to start than one wait covers in the pattern (a torch operation enqueues
  // three: the collective, its callback, an event): this caller does not wait after each call.
  if (completed_.load(std::memory_order_acquire) + kSyncedBatch <= sequence) {
    stopDeferring();
    return false;
  }
  return true;
}

void Stream::stopDeferring() {
  if (!deferStart_.load(std::memory_order_relaxed)) return;
  deferStart_.store(false, std::memory_order_seq_cst);
  syncStreak_.store(0, std::memory_order_relaxed);
  // Pairs with publish()'s fence: an enqueue that still saw the mode is seen by the worker's
  // next look at enqueued_ (the loop after the worker's own stop, or the ring after others').
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void Stream::kick() {
  if (!deferStart_.load(std::memory_order_acquire)) return;
  stopDeferring();
  wakeIfSleeping(workBell_.word());
}

void Stream::sleepDeferred() {
  const uint32_t seen = workBell_.snapshot();
  if (stopping_.load(std::memory_order_acquire)) {
    stopDeferring();
    return;
  }
  const uint64_t done = completed_.load(std::memory_order_acquire);
  if (workerMayRun()) {
    // The same task waits to start at a second wake-up: its caller is not coming. Run it.
    if (done == pendingAtWake_) {
      stopDeferring();
      return;
    }
    pendingAtWake_ = done;
  } else {
    pendingAtWake_ = UINT64_MAX;
    const uint64_t waits = lastWaitEnqueued_.load(std::memory_order_relaxed);
    if (waits != quietMark_) {
      quietMark_ = waits;
      quietWakes_ = 0;
    } else if (++quietWakes_ >= kQuietWakes) {  // the waiting loop is over
      stopDeferring();
      return;
    }
  }
  DoorbellSleeper sleeper(workBell_);
  if (!deferStart_.load(std::memory_order_acquire) || stopping_.load(std::memory_order_acquire)) {
    return;
  }
  sleeper.sleep(seen, kDeferredBound);
}

bool Stream::workerMayRun() const {
  return enqueued_.load(std::memory_order_acquire) > completed_.load(std::memory_order_acquire) &&
         !running_.load(std::memory_order_acquire) && wanting_.load(std::memory_order_acquire) == 0;
}

void Stream::parkWorker() {
  const uint32_t seen = workBell_.snapshot();
  DoorbellSleeper sleeper(workBell_);
  // After the announcement: a waiter leaving, or an enqueue, rings from here on.
  if (workerMayRun()) return;
  if (stopping_.load(std::memory_order_acquire) &&
      enqueued_.load(std::memory_order_acquire) == completed_.load(std::memory_order_acquire)) {
    return;
  }
  // While deferring, the waiter may leave nothing behind and the next enqueue rings nobody.
  sleeper.sleep(seen, deferStart_.load(std::memory_order_acquire) ? kDeferredBound : kMaxSleep);
}

void Stream::workerLoop() {
  tlsCurrentStream = this;
  while (true) {
    // Tasks are left to the caller that waits for each; the worker only checks on them.
    if (deferStart_.load(std::memory_order_acquire) && !running_.load(std::memory_order_acquire) &&
        wanting_.load(std::memory_order_acquire) == 0) {
      sleepDeferred();
      if (deferStart_.load(std::memory_order_acquire)) continue;
    }
    if (workerMayRun()) {
      if (tryTakeToken()) {
        runTasks(UINT64_MAX, true);
        releaseToken();
      }
      continue;
    }
    const bool idle =
        enqueued_.load(std::memory_order_acquire) == completed_.load(std::memory_order_acquire);
    // Stopping only once drained (a producer may still have published before it).
    if (idle && stopping_.load(std::memory_order_acquire)) return;
    if (running_.load(std::memory_order_acquire) || wanting_.load(std::memory_order_acquire) != 0) {
      parkWorker();
      continue;
    }
    // Idle: poll briefly, then sleep; a waiter taking the token ends the polling too.
    sleepUntil(workBell_, kMaxSleep, [&] {
      return enqueued_.load(std::memory_order_acquire) !=
                 completed_.load(std::memory_order_acquire) ||
             stopping_.load(std::memory_order_acquire) ||
             running_.load(std::memory_order_acquire) ||
             deferStart_.load(std::memory_order_acquire) ||
             wanting_.load(std::memory_order_acquire) != 0;
    });
  }
}

uint64_t Stream::runTasks(uint64_t count, bool yieldToWaiters) {
  const uint64_t first = completed_.load(std::memory_order_relaxed);  // ours: we hold the token
  uint64_t next = first;
  // The producers' count is re-read only once the tasks it announced ran (their cache line
  // stays with the producer while it enqueues more).
  uint64_t enqueued = 0;
  while (next < count &&
         (next < enqueued || next < (enqueued = enqueued_.load(std::memory_order_acquire)))) {
    if (yieldToWaiters && wanting_.load(std::memory_order_acquire) != 0) break;
    Work& work = slots_[next % kSlots];
    runOne(work);
    work.task = nullptr;  // destroy the task's captures before the slot is reused
    work.onSkip = nullptr;
    completed_.store(++next, std::memory_order_release);
    wakeWaiters(next);
  }
  return next - first;
}

void Stream::runOne(Work& work) {
  // Only the token's holder writes error_ (under the lock, for other threads' reads), and the
  // token's hand-over orders the holders: no lock here.
  if (!error_.isOk()) {
    if (work.onSkip) work.onSkip(error_);
    return;
  }
  // Tasks see the stream's device as current, whatever an earlier task set.
  setCurrentDevice(device_);
  Status status;
  try {
    status = work.task();
  } catch (const std::exception& e) {
    status = internalError("task on a stream of device {} threw: {}", device_, e.what());
  } catch (...) {
    status = internalError("task on a stream of device {} threw a non-exception", device_);
  }
  if (status.isOk()) return;
  TRN_WARN(kDevice, "device {}: stream task failed, stream now in error: {}", device_,
           status.message());
  std::lock_guard<std::mutex> lock(errorMutex_);
  error_ = std::move(status);
  failed_.store(true, std::memory_order_release);
}

}  // namespace trnccl::device
