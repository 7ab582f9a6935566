// Sleeping on a Doorbell (wait.h) whose producers skip the ring unless somebody sleeps.
//
// Why: ring() costs an atomic add on the consumer's cache line per publication, even when
// nobody sleeps. A producer that publishes very often (the shm LL protocol, a stream's enqueue)
// calls wakeIfSleeping() instead: a seq_cst fence, then a ring only if a sleeper is announced.
// The consumer takes a snapshot(), polls, and when idle announces itself with a DoorbellSleeper,
// polls once more, then sleeps: data published before the announcement is seen by that last
// poll, data published after it finds the sleeper announced and rings (the two fences make it
// one or the other).
#pragma once

#include <chrono>
#include <cstdint>

#include "common/wait.h"

namespace trnccl {

// After the stores that publish work: wakes the doorbell's announced sleepers, if any.
void wakeIfSleeping(DoorbellWord* word);

// Announces a sleeper on a doorbell for its lifetime.
class DoorbellSleeper {
 public:
  explicit DoorbellSleeper(Doorbell& bell);
  ~DoorbellSleeper();
  DoorbellSleeper(const DoorbellSleeper&) = delete;
  DoorbellSleeper& operator=(const DoorbellSleeper&) = delete;
  // Sleeps until the word differs from `seen` (the snapshot taken before the polls), a ring(),
  // or `max` elapses.
  void sleep(uint32_t seen, std::chrono::microseconds max);

 private:
  Doorbell& bell_;
  DoorbellWord* word_;
};

// The whole wait of a consumer whose producers call wakeIfSleeping(): polls `done()` (Backoff),
// then announces itself (after `announce()`, which may publish what it waits for so that the
// producer rings only then), polls once more and sleeps at most `maxSleep`; until done() holds.
template <typename Done, typename Announce>
void sleepUntil(Doorbell& bell, std::chrono::microseconds maxSleep, Done done, Announce announce) {
  // One yield budget per calling thread and wait site (each instantiation has its own): a
  // stream worker's idle wait for work must not shrink the budget of its waits for peers.
  thread_local YieldBudget budget;
  Backoff backoff(WaitPolicy::process(), &budget);
  while (!done()) {
    if (backoff.next()) continue;
    const uint32_t seen = bell.snapshot();
    announce();
    DoorbellSleeper sleeper(bell);
    if (done()) return;
    sleeper.sleep(seen, maxSleep);
  }
}

template <typename Done>
void sleepUntil(Doorbell& bell, std::chrono::microseconds maxSleep, Done done) {
  sleepUntil(bell, maxSleep, done, [] {});
}

}  // namespace trnccl
