// Waiting on an endpoint's completion queue through its wait descriptor (FI_WAIT_FD), for the
// two ways an executor waits (transports/core/waiting.h). With manual progress (tcp;ofi_rxm)
// bytes move only while somebody calls fi_cq_read, so which one an executor uses depends on
// what is in flight on the endpoint:
//
// - Nothing bulky (every message in flight fits a header slot, wire.h kInlineBytes): in
//   poll(2) on the queue's descriptor itself, after fi_trywait said it may (the endpoint's
//   tryWait()), and on kickFd(), an event fd made readable (kick()) when fi_trywait says the
//   queue has news already or another thread took a completion the waiter waits for. One
//   thread wake-up per arrival, none while the executor polls: the thread below sleeps.
// - A large message in flight, or a waiter that also waits on a transport without
//   descriptors (shm): on the doorbell, which this class's thread rings when the descriptor
//   turns readable (watch()). kOnce rings once and stops watching; kContinuous rings at
//   every readable descriptor and then waits for the queue to be read before it polls again
//   (napping 50 us, doubling up to 5 ms), so an executor draining a large message keeps
//   being rung while bytes stream in and rarely blocks at all: blocking in poll(2) between
//   the pieces of a 1 MiB message made 2-32 MiB all-reduces 3-7x slower than this.
//
// The thread only poll()s: libfabric is called by the endpoint's owner alone
// (FI_THREAD_DOMAIN), including fi_trywait() before every wait.
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
  // The completion queue's wait descriptor, and the event fd kick() makes readable.
  int cqFd() const { return fd_; }
  int kickFd() const { return kick_.get(); }
  // Makes kickFd() readable until clearKick(): a waiter in poll(2) returns at once.
  void kick();
  void clearKick();
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
  FdGuard kick_;
  FdGuard control_[2];  // a pipe: a byte ends the thread's poll() (watch() or stop)
  std::atomic<Mode> mode_{Mode::kIdle};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace trnccl::transport::ofi
