#include "transports/ofi/waker.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "common/log.h"

namespace trnccl::transport::ofi {
namespace {

constexpr int kPollMs = 100;
constexpr auto kFirstNap = std::chrono::microseconds(50);
constexpr auto kLongestNap = std::chrono::microseconds(5000);

}  // namespace

Waker::Waker(int fd, Doorbell* bell, const std::atomic<uint64_t>* reads)
    : fd_(fd), bell_(bell), reads_(reads) {
  if (::pipe2(stop_, O_CLOEXEC | O_NONBLOCK) != 0) {
    TRN_WARN(kNet, "ofi: pipe2 failed; the waker thread is off");
    return;
  }
  thread_ = std::thread([this] { run(); });
}

Waker::~Waker() {
  stopping_.store(true);
  if (stop_[1] >= 0) {
    char byte = 1;
    (void)!::write(stop_[1], &byte, 1);
  }
  if (thread_.joinable()) thread_.join();
  for (int fd : stop_) {
    if (fd >= 0) ::close(fd);
  }
}

void Waker::run() {
  while (!stopping_.load()) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    int n = ::poll(fds, 2, kPollMs);
    if (n <= 0 || stopping_.load()) continue;
    if ((fds[0].revents & (POLLIN | POLLERR | POLLHUP)) == 0) continue;
    uint64_t seen = reads_->load(std::memory_order_acquire);
    bell_->ring();
    auto nap = kFirstNap;
    while (!stopping_.load() && reads_->load(std::memory_order_acquire) == seen) {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, kLongestNap);
    }
  }
}

}  // namespace trnccl::transport::ofi
