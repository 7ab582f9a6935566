// Moving test data over connections the way the schedule executor does: a poll loop over
// sends and receives (drive), patterned data, and one exchange step among linked peers.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "common/sleeper.h"
#include "common/status.h"
#include "common/wait.h"
#include "transports/core/transport.h"
#include "transports/core/waiting.h"

namespace trnccl::transport::test {

using namespace std::chrono_literals;

struct SendOp {
  Connection* connection;
  const std::byte* src;
  size_t bytes;
  size_t sent = 0;
  bool done = false;
};

struct RecvOp {
  Connection* connection;
  std::byte* dst;
  size_t bytes;
  size_t got = 0;
};

// One pass over every operation; sets `progress` and `finished`.
inline Status drivePass(std::vector<SendOp>& sends, std::vector<RecvOp>& recvs, bool& progress,
                        bool& finished) {
  progress = false;
  finished = true;
  for (SendOp& op : sends) {
    if (op.done) continue;
    if (op.sent < op.bytes) {
      Result<size_t> n = op.connection->sendSome(op.src + op.sent, op.bytes - op.sent);
      if (!n) return n.status();
      op.sent += *n;
      progress |= *n > 0;
    }
    if (op.sent == op.bytes) {
      Result<bool> done = op.connection->sendDone();
      if (!done) return done.status();
      op.done = *done;
      progress |= op.done;
    }
    finished &= op.done;
  }
  for (RecvOp& op : recvs) {
    if (op.got == op.bytes) continue;
    size_t expectedOffset = op.got;
    bool ordered = true;
    Result<size_t> n = op.connection->recvSome(
        op.bytes - op.got, [&](size_t offset, const std::byte* data, size_t bytes) {
          ordered &= offset == expectedOffset;
          std::memcpy(op.dst + offset, data, bytes);
          expectedOffset += bytes;
        });
    if (!n) return n.status();
    if (!ordered) return Status(Code::kInternalError, "consumer pieces out of order");
    op.got += *n;
    progress |= *n > 0;
    finished &= op.got == op.bytes;
  }
  return Status::ok();
}

// Polls every operation like the executor: when a pass makes no progress, spin a little, then
// announce a sleeper, poll once more and wait as the executor does (waiting.h: on TCP sockets,
// else the doorbell; snapshot taken before the passes, so no ring is lost; shm LL senders ring
// only announced sleepers). `sleep` bounds each wait: a missed wake-up costs that much, so tests
// of wake-ups pass a long one.
inline Status drive(Doorbell& bell, std::vector<SendOp>& sends, std::vector<RecvOp>& recvs,
                    Deadline deadline = Deadline::after(60s),
                    std::chrono::microseconds sleep = 1ms) {
  Backoff backoff;
  while (true) {
    uint32_t seen = bell.snapshot();
    bool progress = false;
    bool finished = true;
    TRN_TRY(drivePass(sends, recvs, progress, finished));
    if (finished) return Status::ok();
    if (deadline.expired()) return Status(Code::kTimeout, "test: transfer timed out");
    if (progress) {
      backoff.reset();
      continue;
    }
    if (backoff.next()) continue;
    DoorbellSleeper sleeper(bell);
    TRN_TRY(drivePass(sends, recvs, progress, finished));
    if (finished) return Status::ok();
    if (progress) {
      backoff.reset();
      continue;
    }
    std::vector<Connection*> waitOn;
    for (const SendOp& op : sends) waitOn.push_back(op.connection);
    for (const RecvOp& op : recvs) waitOn.push_back(op.connection);
    waitForNews(waitOn, sleeper, seen, std::min(sleep, deadline.remaining()));
  }
}

// Offers `bytes` at `src` to the connection's current message until all were taken or
// `deadline` passed, without any receive polled; returns how many were taken.
inline Result<size_t> offer(Connection& connection, const std::byte* src, size_t bytes,
                            Deadline deadline = Deadline::after(5s)) {
  size_t taken = 0;
  while (taken < bytes && !deadline.expired()) {
    Result<size_t> n = connection.sendSome(src + taken, bytes - taken);
    if (!n) return n.status();
    taken += *n;
  }
  return taken;
}

inline void fillPattern(std::vector<std::byte>& buffer, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (auto& b : buffer) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::byte>(x);
  }
}

// A rank's peers and its connections to them.
using Links = std::vector<std::pair<int, Connection*>>;

// Rank r's neighbours in a ring of n: next, then previous (one peer when n is 2).
inline std::vector<int> ringPeers(int r, int n) {
  std::vector<int> peers = {(r + 1) % n};
  if ((r + n - 1) % n != peers[0]) peers.push_back((r + n - 1) % n);
  return peers;
}

// One step for rank r: sends `bytes` of test data to each linked peer and receives as many
// from each, all at once, then checks every byte. Tags and data differ per step, sender and
// receiver, so a message delivered to the wrong step or peer fails.
inline Status exchangeStep(Doorbell& bell, int r, size_t step, size_t bytes, const Links& links) {
  auto tagOf = [step](int from, int to) {
    return (uint64_t{step} << 32) | (static_cast<uint64_t>(from) << 16) | static_cast<uint64_t>(to);
  };
  auto seedOf = [&](int from, int to) { return tagOf(from, to) * 31 + 5; };
  std::vector<std::vector<std::byte>> out(links.size()), in(links.size());
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;
  for (size_t i = 0; i < links.size(); ++i) {
    auto [peer, connection] = links[i];
    out[i].resize(bytes);
    in[i].assign(bytes, std::byte{0xee});
    fillPattern(out[i], seedOf(r, peer));
    TRN_TRY(connection->beginSend(tagOf(r, peer), bytes));
    TRN_TRY(connection->beginRecv(tagOf(peer, r), bytes));
    sends.push_back({connection, out[i].data(), bytes});
    recvs.push_back({connection, in[i].data(), bytes});
  }
  TRN_TRY(drive(bell, sends, recvs));
  for (size_t i = 0; i < links.size(); ++i) {
    std::vector<std::byte> expected(bytes);
    fillPattern(expected, seedOf(links[i].first, r));
    if (in[i] != expected) {
      return internalError("rank {}: {} bytes from rank {} differ", r, bytes, links[i].first);
    }
  }
  return Status::ok();
}

// Streams `count` messages to `peer` over `connection` while receiving `count` from it, back to
// back: each direction begins its next message as soon as the current one is done, so a sender
// may run ahead of its receiver by whatever the transport buffers. Message i has
// sizeOf(i) bytes, its own tag and data; every byte is checked. The first error, or OK.
template <typename SizeOf>
Status streamMessages(Doorbell& bell, int r, int peer, Connection* connection, size_t count,
                      SizeOf sizeOf, Deadline deadline = Deadline::after(60s)) {
  auto tagOf = [](int from, size_t i) { return (uint64_t{i} << 16) | static_cast<uint64_t>(from); };
  std::vector<std::byte> out, in, expected;
  size_t sent = 0, received = 0;
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;
  auto beginSend = [&]() -> Status {
    out.resize(sizeOf(sent));
    fillPattern(out, tagOf(r, sent) * 7 + 1);
    TRN_TRY(connection->beginSend(tagOf(r, sent), out.size()));
    sends = {{connection, out.data(), out.size()}};
    return Status::ok();
  };
  auto beginRecv = [&]() -> Status {
    in.assign(sizeOf(received), std::byte{0xee});
    TRN_TRY(connection->beginRecv(tagOf(peer, received), in.size()));
    recvs = {{connection, in.data(), in.size()}};
    return Status::ok();
  };
  TRN_TRY(beginSend());
  TRN_TRY(beginRecv());
  Backoff backoff;
  while (sent < count || received < count) {
    uint32_t seen = bell.snapshot();
    bool progress = false, finished = false;
    TRN_TRY(drivePass(sends, recvs, progress, finished));
    if (sent < count && sends[0].done && ++sent < count) TRN_TRY(beginSend());
    if (received < count && recvs[0].got == recvs[0].bytes) {
      expected.resize(in.size());
      fillPattern(expected, tagOf(peer, received) * 7 + 1);
      if (in != expected) {
        return internalError("rank {}: message {} of {} bytes from rank {} differs", r, received,
                             in.size(), peer);
      }
      if (++received < count) TRN_TRY(beginRecv());
    }
    if (deadline.expired()) return Status(Code::kTimeout, "test: message stream timed out");
    if (progress) {
      backoff.reset();
    } else if (!backoff.next()) {
      DoorbellSleeper sleeper(bell);
      TRN_TRY(drivePass(sends, recvs, progress, finished));
      if (!progress) sleeper.sleep(seen, 1ms);
    }
  }
  return Status::ok();
}

}  // namespace trnccl::transport::test
