#include "transports/ofi/waker.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "common/log.h"

namespace trnccl::transport::ofi {
namespace {

// A bound on each poll(2) of the thread, so a lost control byte costs at most this.
constexpr int kPollMs = 100;

}  // namespace

Waker::Waker(int fd, Doorbell* bell)
    : fd_(fd), bell_(bell), kick_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  int pipe[2] = {-1, -1};
  if (!kick_ || ::pipe2(pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    TRN_WARN(kNet, "ofi: eventfd or pipe2 failed; the waker thread is off");
    return;
  }
  control_[0].reset(pipe[0]);
  control_[1].reset(pipe[1]);
  thread_ = std::thread([this] { run(); });
}

Waker::~Waker() {
  stopping_.store(true);
  if (control_[1]) {
    char byte = 1;
    (void)!::write(control_[1].get(), &byte, 1);
  }
  if (thread_.joinable()) thread_.join();
}

void Waker::kick() {
  uint64_t one = 1;
  (void)!::write(kick_.get(), &one, sizeof(one));
}

void Waker::clearKick() {
  uint64_t value = 0;
  (void)!::read(kick_.get(), &value, sizeof(value));
}

void Waker::arm() {
  if (!control_[1] || armed_.exchange(true, std::memory_order_acq_rel)) return;
  char byte = 1;
  (void)!::write(control_[1].get(), &byte, 1);
}

void Waker::drainControl() {
  char bytes[64];
  while (::read(control_[0].get(), bytes, sizeof(bytes)) > 0) {
  }
}

void Waker::run() {
  while (!stopping_.load()) {
    const bool armed = armed_.load(std::memory_order_acquire);
    // poll(2) skips a negative descriptor: unarmed, only the control pipe can wake us.
    pollfd fds[2] = {{control_[0].get(), POLLIN, 0}, {armed ? fd_ : -1, POLLIN, 0}};
    int n = ::poll(fds, 2, kPollMs);
    if (n <= 0 || stopping_.load()) continue;
    if (fds[0].revents != 0) drainControl();
    if (!armed || (fds[1].revents & (POLLIN | POLLERR | POLLHUP)) == 0) continue;
    armed_.store(false, std::memory_order_release);
    bell_->ring();
  }
}

}  // namespace trnccl::transport::ofi
