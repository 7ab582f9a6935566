// One direction of a Connection (transport.h): the message in flight, its tag and length, and
// how many of its bytes have moved (taken from the sender, or handed to the consumer).
//
// A direction carries one message at a time, in order, so begin() refuses the next message
// while bytes of the current one are left. Every transport keeps one MessageState per
// direction, so the rule and its error read the same for all of them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace trnccl::transport {

class MessageState {
 public:
  enum class Direction { kSend, kRecv };

  // `transport` and `peer` name the connection in errors.
  MessageState(const char* transport, Direction direction, int peer)
      : transport_(transport), direction_(direction), peer_(peer) {}

  // Starts the next message; kInvalidUsage, naming the peer, while the current one has bytes
  // left.
  Status begin(uint64_t tag, uint64_t bytes) {
    if (!complete()) return busy();
    tag_ = tag;
    bytes_ = bytes;
    moved_ = 0;
    return Status::ok();
  }
  // Counts `n` more bytes of the message as moved (at most left()).
  void advance(uint64_t n) { moved_ += n; }

  uint64_t tag() const { return tag_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t moved() const { return moved_; }
  uint64_t left() const { return bytes_ - moved_; }
  bool complete() const { return moved_ == bytes_; }
  // The part of `offered` bytes that the message still has room for.
  size_t clamp(size_t offered) const {
    return static_cast<size_t>(std::min<uint64_t>(offered, left()));
  }

 private:
  Status busy() const;  // the error of begin() with bytes left

  const char* transport_;
  Direction direction_;
  int peer_;
  uint64_t tag_ = 0;
  uint64_t bytes_ = 0;
  uint64_t moved_ = 0;
};

}  // namespace trnccl::transport
