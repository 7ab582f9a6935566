// Waiting on an endpoint's completion queue through its wait descriptor (FI_WAIT_FD), for the
// two ways an executor waits (transports/core/waiting.h):
//
// - In poll(2) itself, when every connection it waits on is ofi: on the queue's descriptor
//   and on kickFd(), an event fd the connection makes readable (kick()) when fi_trywait()
//   says the queue has news already (the descriptor may not show it: the provider can hold
//   bytes it read ahead). One wake-up per arrival, no thread in between.
// - On the doorbell, when it also waits for another transport (shm): arm() first, and this
//   class's thread polls the descriptor until it turns readable once, rings the doorbell and
//   disarms. Unarmed, the thread sleeps on its control pipe and never wakes for arrivals the
//   executor sees itself (a thread woken per message costs a core's worth on 2 cores).
//
// The thread only poll()s: libfabric is called by the endpoint's owner alone
// (FI_THREAD_DOMAIN), including fi_trywait() before every wait.
#pragma once

#include <atomic>
#include <thread>

#include "common/fd_guard.h"
#include "common/wait.h"

namespace trnccl::transport::ofi {

class Waker {
 public:
  Waker(int fd, Doorbell* bell);
  ~Waker();  // stops and joins the thread
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;

  // The completion queue's wait descriptor, and the event fd kick() makes readable.
  int cqFd() const { return fd_; }
  int kickFd() const { return kick_.get(); }
  // Makes kickFd() readable until clearKick(): a waiter in poll(2) returns at once.
  void kick();
  void clearKick();
  // Rings the doorbell once the descriptor turns readable (then disarms).
  void arm();
  // Rings the doorbell now (news is pending: no need to watch).
  void ring() { bell_->ring(); }

 private:
  void run();
  void drainControl();

  int fd_;
  Doorbell* bell_;
  FdGuard kick_;
  FdGuard control_[2];  // a pipe: a byte ends the thread's poll() (arm() or stop)
  std::atomic<bool> armed_{false};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace trnccl::transport::ofi
