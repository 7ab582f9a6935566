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

// A 32-bit futex word, possibly in memory shared between processes. Producers ring() it after
// publishing work; a consumer takes a snapshot(), re-checks for work, then sleep()s on it.
class Doorbell {
 public:
  explicit Doorbell(std::atomic<uint32_t>* word) : word_(word) {}
  uint32_t snapshot() const { return word_->load(std::memory_order_acquire); }
  void ring();
  // Sleeps until the word differs from `seen`, a wake-up, or `max` elapses.
  void sleep(uint32_t seen, std::chrono::microseconds max);
  std::atomic<uint32_t>* word() const { return word_; }

 private:
  std::atomic<uint32_t>* word_;
};

// Spin-then-block policy for a polling loop: call reset() after progress and next() when none
// was made; next() returns true while the loop should keep polling without sleeping.
class Backoff {
 public:
  void reset() { idle_ = 0; }
  bool next();

 private:
  int idle_ = 0;
};

}  // namespace trnccl
