// When the executor's thread reads an empty socket again (link.h, Link::pull and readInto).
//
// A spinning executor polls many times a microsecond; a system call each time stretched its
// spin from a few microseconds to a hundred and kept the core its peer needs. So after a read
// found the socket empty, the next read waits. How long: the first wait is short (kFirst),
// because on an uncontended core the peer's message usually lands within a microsecond or two
// of our first read (at 2 ranks both send at once, and a loopback send queues the bytes in our
// socket before the peer's sendmsg returns); a fixed 8 µs left bytes that were already there
// unread for up to 8 µs (4 on average) after each such empty read, which about a quarter of
// the small receives at 2 ranks meet (perf stat: ~1.3 recvmsg per message). Each further empty
// read doubles the wait up to kMax, the old fixed cadence, so a long wait costs a few system
// calls more than before (about 3), not one per spin. Bytes, or poll(2) seeing the socket
// readable (Link::wokeUp), start over.
#pragma once

#include <algorithm>
#include <chrono>

#include "common/wait.h"

namespace trnccl::transport::tcp {

class Repoll {
 public:
  static constexpr std::chrono::nanoseconds kFirst = std::chrono::microseconds(1);
  static constexpr std::chrono::nanoseconds kMax = std::chrono::microseconds(8);

  // Whether a read at `now` may go to the socket.
  bool due(Clock::time_point now) const { return now >= next_; }
  // A read at `now` found the socket empty.
  void empty(Clock::time_point now) {
    next_ = now + wait_;
    wait_ = std::min<std::chrono::nanoseconds>(2 * wait_, kMax);
  }
  // Bytes arrived, or poll(2) saw the socket readable: the next read goes at once.
  void reset() {
    next_ = {};
    wait_ = kFirst;
  }
  // The wait the next empty read starts (tests).
  std::chrono::nanoseconds wait() const { return wait_; }

 private:
  Clock::time_point next_{};
  std::chrono::nanoseconds wait_ = kFirst;
};

}  // namespace trnccl::transport::tcp
