#include "transports/ofi/waker.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "common/thread.h"
#include "transports/ofi/testing.h"

namespace trnccl::transport::ofi {
namespace {

// A bound on each poll(2) of the thread, so a lost control byte costs at most this.
constexpr int kPollMs = 100;
constexpr auto kFirstNap = std::chrono::microseconds(50);
constexpr auto kLongestNap = std::chrono::microseconds(5000);

}  // namespace

Waker::Waker(int fd, Doorbell* bell, const std::atomic<uint64_t>* reads)
    : fd_(fd), bell_(bell), reads_(reads) {
  int pipe[2] = {-1, -1};
  if (::pipe2(pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    TRN_WARN(kNet, "ofi: pipe2 failed; polling the completion queue only");
    return;
  }
  control_[0].reset(pipe[0]);
  control_[1].reset(pipe[1]);
  thread_ = startThread([this] { run(); });
}

Waker::~Waker() {
  stopping_.store(true);
  if (control_[1]) {
    char byte = 1;
    (void)!::write(control_[1].get(), &byte, 1);
  }
  if (thread_.joinable()) thread_.join();
}

void Waker::watch(Mode mode) {
  if (mode_.exchange(mode, std::memory_order_acq_rel) == mode || mode == Mode::kIdle) return;
  char byte = 1;  // the thread sleeps on the pipe alone while idle: make it watch
  (void)!::write(control_[1].get(), &byte, 1);
}

void Waker::drainControl() {
  char bytes[64];
  while (::read(control_[0].get(), bytes, sizeof(bytes)) > 0) {
  }
}

void Waker::napUntilRead(uint64_t seen) {
  auto nap = kFirstNap;
  while (!stopping_.load() && mode() == Mode::kContinuous &&
         reads_->load(std::memory_order_acquire) == seen) {
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, kLongestNap);
  }
}

void Waker::run() {
  while (!stopping_.load()) {
    const bool watching = mode() != Mode::kIdle;
    // poll(2) skips a negative descriptor: idle, only the control pipe can wake us.
    pollfd fds[2] = {{control_[0].get(), POLLIN, 0}, {watching ? fd_ : -1, POLLIN, 0}};
    int n = ::poll(fds, 2, kPollMs);
    if (n <= 0 || stopping_.load()) continue;
    if (fds[0].revents != 0) drainControl();
    if ((fds[1].revents & (POLLIN | POLLERR | POLLHUP)) == 0) continue;
    // The descriptor stays readable until the owner reads the queue: remember where it was.
    const uint64_t seen = reads_->load(std::memory_order_acquire);
    Mode once = Mode::kOnce;
    if (mode_.compare_exchange_strong(once, Mode::kIdle, std::memory_order_acq_rel)) {
      bell_->ring();
      testing::counters().add(testing::Event::kWakerRings);
    } else if (mode() == Mode::kContinuous) {
      bell_->ring();
      testing::counters().add(testing::Event::kWakerRings);
      napUntilRead(seen);
    }
  }
}

}  // namespace trnccl::transport::ofi
