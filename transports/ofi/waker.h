// Rings the communicator's doorbell for an executor asleep on it when the endpoint's completion
// queue's wait descriptor (FI_WAIT_FD) turns readable (transports/core/waiting.h: ofi offers
// no descriptors of its own, so the executor sleeps on the doorbell). With manual progress
// (tcp;ofi_rxm) bytes move only while somebody calls fi_cq_read: the executor does, over and
// over, while it spins and yields; this thread only covers its blocked phase.
//
// Before it sleeps the executor says how to watch (OfiConnection::armDoorbell, after
// fi_trywait said it may block): kOnce rings once and stops watching; kContinuous, while a
// large message is in flight, rings at every readable descriptor and then waits for the queue
// to be read before it polls again (napping 50 us, doubling up to 5 ms), so an executor
// draining a large message keeps being rung while bytes stream in, also while it is awake
// (a ring since its last snapshot ends its next sleep at once), and stays so until the
// executor next sleeps with nothing large in flight: leaving kContinuous as soon as a piece
// was through made 2-16 MiB all-reduces 1.4x slower. kOnce ends in kIdle, where the thread
// sleeps on its control pipe: arrivals the executor picks up while it polls wake nobody else.
// Before, the thread watched all the time: every arrival woke it and then the executor, two thread
// wake-ups per message, the first even while the executor spun.
//
// The executor waiting in poll(2) on the descriptor itself was tried three times (d91aa8b,
// once more in session 5, and here): one wake-up instead of two when it blocks, but 2-16 MiB
// all-reduces 3-4x slower (5 ms poll timeouts, nothing readable, while the peer waited too)
// and, with large messages kept on the doorbell, small ones 1.5-2x slower over 2,000-call
// runs; see README.md.
//
// The thread only poll()s: libfabric is called by the endpoint's owner alone
// (FI_THREAD_DOMAIN), including fi_trywait() before every sleep.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "common/fd_guard.h"
#include "common/wait.h"

namespace trnccl::transport::ofi {

class Waker {
 public:
  enum class Mode : uint8_t { kIdle, kOnce, kContinuous };

  // `reads` counts the owner's reads of the queue (kContinuous waits for it to move).
  Waker(int fd, Doorbell* bell, const std::atomic<uint64_t>* reads);
  ~Waker();  // stops and joins the thread
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;

  // False when the thread or its descriptors could not be made: the owner polls only.
  bool running() const { return thread_.joinable(); }
  // What the thread does from now on (see the header); kIdle: it sleeps.
  void watch(Mode mode);
  Mode mode() const { return mode_.load(std::memory_order_acquire); }
  // Rings the doorbell now (news is pending: no need to watch).
  void ring() { bell_->ring(); }

 private:
  void run();
  void drainControl();
  // After a kContinuous ring: until the queue was read, the mode changed or we stop.
  void napUntilRead(uint64_t seen);

  int fd_;
  Doorbell* bell_;
  const std::atomic<uint64_t>* reads_;
  FdGuard control_[2];  // a pipe: a byte ends the thread's poll() (watch() or stop)
  std::atomic<Mode> mode_{Mode::kIdle};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace trnccl::transport::ofi
