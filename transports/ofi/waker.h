// Rings a doorbell when a completion queue's wait descriptor turns readable, so that an
// executor asleep on the doorbell wakes when data or room arrives.
//
// The thread only poll()s the descriptor: libfabric is called by the endpoint's owner alone
// (FI_THREAD_DOMAIN). The descriptor stays readable until the owner reads the queue, so after
// each ring the thread waits for the endpoint's read counter to move before polling again
// (sleeping 50 us, doubling up to 5 ms, while nobody reads).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "common/wait.h"

namespace trnccl::transport::ofi {

class Waker {
 public:
  Waker(int fd, Doorbell* bell, const std::atomic<uint64_t>* reads);
  ~Waker();  // stops and joins the thread
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;

 private:
  void run();

  int fd_;
  Doorbell* bell_;
  const std::atomic<uint64_t>* reads_;
  int stop_[2] = {-1, -1};  // a pipe: writing to it ends poll() at once
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace trnccl::transport::ofi
