// Deadlines and the spin-then-block wait every blocking loop in trnccl uses.
//
// Why: tests run 8-32 ranks on 2 cores. A waiter that only spins steals the core the peer it
// waits for needs, so every wait spins briefly, yields a little, then sleeps on a futex word
// (a Doorbell) that the producer rings. Sleeps are bounded so the loop can check its deadline,
// an abort flag and peer liveness.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "common/backoff.h"  // Backoff: the spin, yield, then block policy of every wait

namespace trnccl {

using Clock = std::chrono::steady_clock;

class Deadline {
 public:
  static Deadline after(std::chrono::milliseconds ms) { return Deadline(Clock::now() + ms); }
  static Deadline never() { return Deadline(Clock::time_point::max()); }
  explicit Deadline(Clock::time_point at) : at_(at) {}

  bool expired() const { return Clock::now() >= at_; }
  Clock::time_point at() const { return at_; }
  // Time left, never negative; capped so it fits a futex timeout.
  std::chrono::microseconds remaining() const;

 private:
  Clock::time_point at_;
};

// The memory of a Doorbell; may live in a segment shared between processes.
struct DoorbellWord {
  std::atomic<uint32_t> seq{0};       // futex word, bumped by every ring()
  std::atomic<uint32_t> sleepers{0};  // ring() skips the wake syscall while this is 0
};

// Producers ring() a Doorbell after publishing work; a consumer takes a snapshot(), re-checks
// for work, then sleep()s. rebind() moves the doorbell's word into shared memory (the shm
// transport does this at setup so that peers in other processes can ring it) and keeps that
// memory mapped for as long as the Doorbell lives: threads of other transports (a TCP I/O
// thread, the libfabric waker) may ring it until they are joined, in whatever order the
// transports are torn down.
class Doorbell {
 public:
  Doorbell() : word_(&own_) {}
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  uint32_t snapshot() const { return word()->seq.load(std::memory_order_acquire); }
  void ring() { ring(word()); }
  // Sleeps until the word differs from `seen`, a ring(), or `max` elapses.
  void sleep(uint32_t seen, std::chrono::microseconds max);
  DoorbellWord* word() const { return word_.load(std::memory_order_acquire); }
  // Once, during setup. A ring() racing with it may still hit the old word (a sleeper then
  // wakes at its next bounded timeout), never freed memory.
  void rebind(DoorbellWord* word, std::shared_ptr<const void> keepAlive) {
    keepAlive_ = std::move(keepAlive);
    word_.store(word, std::memory_order_release);
  }

  // Rings a doorbell given only its memory (e.g. a peer's, mapped from its segment).
  static void ring(DoorbellWord* word);

 private:
  DoorbellWord own_;
  std::shared_ptr<const void> keepAlive_;  // the mapping word_ points into, if not own_
  std::atomic<DoorbellWord*> word_;
};

}  // namespace trnccl
