#include "transports/core/waiting.h"

#include <poll.h>

#include <vector>

namespace trnccl::transport {

void waitForNews(std::span<Connection* const> conns, DoorbellSleeper& sleeper, uint32_t seen,
                 std::chrono::microseconds max) {
  // Reused per thread: no allocation per wait once grown.
  thread_local std::vector<pollfd> fds;
  thread_local std::vector<size_t> ends;  // conns[i]'s descriptors end at fds[ends[i]]
  thread_local std::vector<int> mine;
  fds.clear();
  ends.clear();
  bool all = !conns.empty();
  for (Connection* c : conns) {
    mine.clear();
    c->wakeFds(mine);
    if (mine.empty()) {
      all = false;
      break;
    }
    for (int fd : mine) fds.push_back(pollfd{fd, POLLIN, 0});
    ends.push_back(fds.size());
  }
  if (!all) {
    for (Connection* c : conns) c->armDoorbell();
    sleeper.sleep(seen, max);
    return;
  }
  const auto us = std::max<int64_t>(0, max.count());
  const timespec timeout{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
  if (::ppoll(fds.data(), fds.size(), &timeout, nullptr) <= 0) return;
  size_t begin = 0;
  for (size_t i = 0; i < conns.size(); ++i) {
    for (size_t f = begin; f < ends[i]; ++f) {
      if (fds[f].revents != 0) {
        conns[i]->woke();
        break;
      }
    }
    begin = ends[i];
  }
}

}  // namespace trnccl::transport
