#include "common/backoff.h"

#include <sched.h>

#include <algorithm>

#include "common/env.h"
#include "common/log.h"

namespace trnccl {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

// A TRNCCL_WAIT_* integer in [lo, hi], or `fallback` (with a warning when out of range).
int64_t knob(const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  const int64_t v = env::getInt(name, fallback);
  if (v >= lo && v <= hi) return v;
  TRN_WARN(kEnv, "ignoring {}={}: not in [{}, {}]", name, v, lo, hi);
  return fallback;
}

WaitPolicy fromEnvironment() {
  WaitPolicy p;
  p.spinPolls = static_cast<int>(knob("TRNCCL_WAIT_SPIN", p.spinPolls, 0, 1 << 20));
  p.yieldPolls = static_cast<int>(knob("TRNCCL_WAIT_YIELD", p.yieldPolls, 0, 1 << 20));
  p.yieldMax = microseconds(knob("TRNCCL_WAIT_YIELD_US", p.yieldMax.count(), 0, 1000000));
  p.yieldMin = microseconds(knob("TRNCCL_WAIT_YIELD_MIN_US",
                                 std::min(p.yieldMin, p.yieldMax).count(), 0, p.yieldMax.count()));
  p.adaptive = knob("TRNCCL_WAIT_ADAPTIVE", p.adaptive ? 1 : 0, 0, 1) == 1;
  TRN_INFO(kEnv, "waits: spin {} polls, then yield up to {} polls and {}-{} us ({}), then block",
           p.spinPolls, p.yieldPolls, p.yieldMin.count(), p.yieldMax.count(),
           p.adaptive ? "adaptive" : "fixed");
  return p;
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

const WaitPolicy& WaitPolicy::process() {
  static const WaitPolicy policy = fromEnvironment();
  return policy;
}

nanoseconds YieldBudget::limit(const WaitPolicy& policy) const {
  if (!policy.adaptive || ns_ < 0) return policy.yieldMax;
  const nanoseconds ceiling(policy.yieldMax);
  return std::clamp(nanoseconds(ns_), std::min(nanoseconds(policy.yieldMin), ceiling), ceiling);
}

void YieldBudget::satisfiedWhileYielding(nanoseconds yielded, const WaitPolicy& policy) {
  // Yielding paid off: allow at least twice what this wait needed, and double quickly back up
  // after a run of long waits had shrunk the budget.
  const int64_t grown = std::max<int64_t>(2 * limit(policy).count(), 2 * yielded.count());
  ns_ = std::min<int64_t>(grown, nanoseconds(policy.yieldMax).count());
}

void YieldBudget::blocked(const WaitPolicy& policy) {
  // The yields were spent for nothing: shrink slowly (one long wait among short ones should
  // not undo what they learned).
  const int64_t now = limit(policy).count();
  ns_ = std::max<int64_t>(now - now / 8, nanoseconds(policy.yieldMin).count());
}

int YieldBudget::spinLimit(const WaitPolicy& policy) const {
  if (!policy.adaptive || spins_ < 0) return policy.spinPolls;
  return std::min(spins_, policy.spinPolls);
}

void YieldBudget::contended() { spins_ = 0; }

void YieldBudget::uncontended(const WaitPolicy& policy) {
  spins_ = std::min(policy.spinPolls, 2 * spinLimit(policy) + 1);
}

Backoff::Backoff() : Backoff(WaitPolicy::process(), nullptr) {
  thread_local YieldBudget shared;
  budget_ = &shared;
}

Backoff::Backoff(const WaitPolicy& policy, YieldBudget* budget)
    : policy_(policy), budget_(budget) {}

void Backoff::endWait() {
  const bool adapt = budget_ != nullptr && policy_.adaptive;
  if (adapt && idle_ > spinLimit_) {
    if (blocked_) {
      budget_->blocked(policy_);  // next() measured every yield, the last one too
    } else {
      const Clock::time_point now = Clock::now();
      budget_->satisfiedWhileYielding(now - yieldFrom_, policy_);
      // The yield that ended the wait counts too: a wait that one yield ended measured none
      // until session 9, and that is every wait of two workers sharing a core (the yield runs
      // the peer, which sends and yields back): they never saw the contention and kept
      // spinning (issue 14).
      if (now - lastYield_ > kContendedYield) contended_ = true;
    }
    // One yield that came back late is enough to stop spinning; it takes a wait whose every
    // yield returned at once to spin more.
    if (contended_) {
      budget_->contended();
    } else {
      budget_->uncontended(policy_);
    }
  }
  idle_ = 0;
  blocked_ = false;
  contended_ = false;
}

bool Backoff::next() {
  if (blocked_) return false;  // once blocked, every idle poll of this wait sleeps
  if (idle_++ == 0) {
    spinLimit_ = budget_ != nullptr ? budget_->spinLimit(policy_) : policy_.spinPolls;
  }
  if (idle_ <= spinLimit_) {
    cpuRelax();
    return true;
  }
  const int yields = idle_ - spinLimit_;
  const Clock::time_point now = Clock::now();
  if (yields == 1) {
    yieldFrom_ = now;
    yieldLimit_ = budget_ != nullptr ? budget_->limit(policy_) : nanoseconds(policy_.yieldMax);
  } else if (now - lastYield_ > kContendedYield) {
    contended_ = true;
  }
  if (yields <= policy_.yieldPolls && yieldLimit_.count() > 0 &&
      (yields == 1 || now - yieldFrom_ < yieldLimit_)) {
    lastYield_ = now;
    sched_yield();
    return true;
  }
  blocked_ = true;
  return false;
}

}  // namespace trnccl
