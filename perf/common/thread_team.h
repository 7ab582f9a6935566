// The -t threads of one process. They meet where nccl-tests' threads meet (the barrier before
// each timed loop, the reductions of the time and of #wrong); at each meeting thread 0 - the
// main thread, the only one that makes MPI calls (MPI_THREAD_FUNNELED) - runs the cross-process
// step while the others wait. Waits are bounded: a failed thread breaks the team (the others
// stop waiting and fail too), and a wait gives up after 2 x T + 10 s (-T; 1800 s without), a
// safety net behind each thread's own bound on its streams.
// Header only: the driver is its one user.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "common/local_ranks.h"
#include "common/rank_layout.h"
#include "common/world.h"

namespace trnccl::perf {

class ThreadTeam {
 public:
  ThreadTeam(int threads, double timeoutSec)
      : threads_(threads),
        timeoutSec_(timeoutSec),
        times_(size_t(threads)),
        counts_(size_t(threads)) {}

  // Waits until every thread arrived, runs `leader` on thread 0 while the others still wait,
  // then releases them all. Throws Failure when the team broke or the wait timed out.
  void sync(int thread, const std::function<void()>& leader = {}) {
    std::unique_lock lock(mutex_);
    const uint64_t generation = generation_;
    if (++arrived_ == threads_) changed_.notify_all();
    if (thread != 0) {
      wait(lock, thread, [&] { return generation_ != generation; });
      return;
    }
    wait(lock, thread, [&] { return arrived_ == threads_; });
    lock.unlock();
    if (leader) leader();
    lock.lock();
    arrived_ = 0;
    ++generation_;
    changed_.notify_all();
  }

  // Breaks the team: every waiting and later sync() throws.
  void fail() {
    std::lock_guard lock(mutex_);
    broken_ = true;
    changed_.notify_all();
  }

  // -a over every thread of every process; each thread gets the same result.
  double reduceTime(int thread, double seconds, TimeAverage how, World& world) {
    setSlot(times_, thread, seconds);
    sync(thread, [&] { timeResult_ = world.reduceTime(combineThreadTimes(times_, how), how); });
    std::lock_guard lock(mutex_);
    return timeResult_;
  }

  // Sum over every thread of every process; each thread gets the same result.
  int64_t sum(int thread, int64_t value, World& world) {
    setSlot(counts_, thread, value);
    sync(thread, [&] {
      int64_t local = 0;
      for (const int64_t v : counts_) local += v;
      countResult_ = world.sum(local);
    });
    std::lock_guard lock(mutex_);
    return countResult_;
  }

 private:
  template <typename T>
  void setSlot(std::vector<T>& slots, int thread, T value) {
    std::lock_guard lock(mutex_);
    slots[size_t(thread)] = value;
  }

  template <typename Pred>
  void wait(std::unique_lock<std::mutex>& lock, int thread, Pred done) {
    auto over = [&] { return broken_ || done(); };
    // Without -T the bound is 30 min, longer than any timed loop of a sane run:
    // a thread stuck outside the library must not hold the others forever either.
    const double limitSec = timeoutSec_ > 0 ? 2 * timeoutSec_ + 10 : 1800;
    if (!changed_.wait_for(lock, std::chrono::duration<double>(limitSec), over)) {
      throw Failure(
          fmt::format("timeout: thread {} waited more than {} s for the other threads "
                      "of its process (-T {})",
                      thread, limitSec, timeoutSec_));
    }
    if (broken_) {
      throw Failure(fmt::format("thread {}: another thread of this process failed", thread));
    }
  }

  const int threads_;
  const double timeoutSec_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool broken_ = false;
  std::vector<double> times_;    // reduceTime's inputs, one per thread
  std::vector<int64_t> counts_;  // sum's inputs
  double timeResult_ = 0;
  int64_t countResult_ = 0;
};

}  // namespace trnccl::perf
