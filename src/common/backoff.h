// How a polling loop waits before it blocks: spin, then yield, then sleep.
//
// Why: tests and users run 4-64 ranks on 2 cores, each rank a stream worker polling its peers.
// A waiter that spins steals the core its peer needs; one that blocks at once pays a futex wake
// and a scheduler wake-up (tens of µs on a VM whose idle vCPU halts) for every hop. Between the
// two, sched_yield() hands the core to a runnable peer and gets it back when that peer waits in
// turn, as OpenMPI's mpi_yield_when_idle does; a core with nothing else runnable returns at once.
// So a wait spins `spinPolls` polls, then yields for at most `yieldPolls` polls and at most the
// waiter's yield budget in time, then reports "block": the caller sleeps on a futex (bounded by
// its deadline), so a waiter with nothing to do reaches the sleep within the budget whatever the
// load. The budget adapts per waiter, as glibc's adaptive mutex does for spins: it grows to at
// least twice the yield time a wait needed after one that yielding satisfied, and shrinks after
// a wait that had to block, between the floor and the ceiling below. The spin adapts too: a
// spin only helps when nobody else wants the core, so a waiter whose yields come back late
// (another thread ran meanwhile: the core is contended) stops spinning, and one whose yields
// return at once (an idle core, as at 2 ranks on 2 cores) spins again, up to `spinPolls`.
//
// Knobs (read once per process; docs/ARCHITECTURE.md, "Waiting"):
//   TRNCCL_WAIT_SPIN         polls with a pause between them before yielding (default 64)
//   TRNCCL_WAIT_YIELD        at most this many sched_yield() polls per wait (default 256)
//   TRNCCL_WAIT_YIELD_US     the yield budget's ceiling in µs (default 50; 0: no yield phase)
//   TRNCCL_WAIT_YIELD_MIN_US the yield budget's floor in µs (default 4)
//   TRNCCL_WAIT_ADAPTIVE     1: adapt the budget per waiter (default); 0: always the ceiling
#pragma once

#include <chrono>
#include <cstdint>

namespace trnccl {

// A sched_yield() (and the poll after it) that takes longer than this ran another thread: a
// bare one takes 0.52-0.68 us on our 2-core VMs (session 9). It was 5 us until then, which two
// ranks' workers sharing one core never reached: each one's yield ran the other's step and its
// 64-pause spin (~1.6 us) and came back within ~3 us, so neither stopped spinning (issue 14;
// src/common/README.md, "Waiters sharing a core").
inline constexpr std::chrono::nanoseconds kContendedYield{1500};

struct WaitPolicy {
  int spinPolls = 64;
  int yieldPolls = 256;
  std::chrono::microseconds yieldMax{50};
  std::chrono::microseconds yieldMin{4};
  bool adaptive = true;

  // The process's policy: the defaults above, overridden by the TRNCCL_WAIT_* variables (read
  // at the first call; a bad value is ignored with a warning).
  static const WaitPolicy& process();
};

// One waiter's yield budget, kept across its waits (a thread_local per wait site).
class YieldBudget {
 public:
  // The pause polls this waiter spins before yielding.
  int spinLimit(const WaitPolicy& policy) const;
  // A wait saw its core contended (a yield came back late), or idle (every yield at once).
  void contended();
  void uncontended(const WaitPolicy& policy);
  // The yield time this waiter may spend in its next wait.
  std::chrono::nanoseconds limit(const WaitPolicy& policy) const;
  // A wait ended after `yielded` in the yield phase, without blocking.
  void satisfiedWhileYielding(std::chrono::nanoseconds yielded, const WaitPolicy& policy);
  // A wait had to block.
  void blocked(const WaitPolicy& policy);

 private:
  int64_t ns_ = -1;  // < 0: not adapted yet (the policy's ceiling)
  int spins_ = -1;   // < 0: not adapted yet (the policy's spinPolls)
};

// The policy for one polling loop: call reset() after progress (it ends a wait) and next() when
// none was made; next() returns true while the loop should keep polling, false when it should
// block (sleep on its doorbell, bounded), after which it calls next() again until progress.
class Backoff {
 public:
  Backoff();  // the process's policy and this thread's shared budget
  Backoff(const WaitPolicy& policy, YieldBudget* budget);
  ~Backoff() { reset(); }
  Backoff(const Backoff&) = delete;
  Backoff& operator=(const Backoff&) = delete;

  // Inline when nothing happened since the last reset (idle_ == 0 implies the rest is clear):
  // every progressing poll calls it.
  void reset() {
    if (idle_ != 0) endWait();
  }
  bool next();

 private:
  void endWait();  // adapts the budget to the wait that just ended, then clears it

  using Clock = std::chrono::steady_clock;

  const WaitPolicy& policy_;
  YieldBudget* budget_;  // nullptr: the ceiling, no adaptation
  int idle_ = 0;         // polls without progress in this wait
  int spinLimit_ = 0;    // this wait's spin polls
  bool blocked_ = false;
  bool contended_ = false;  // a yield of this wait came back late
  Clock::time_point yieldFrom_{}, lastYield_{};
  std::chrono::nanoseconds yieldLimit_{0};
};

}  // namespace trnccl
