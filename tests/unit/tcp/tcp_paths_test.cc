// The TCP transport's in-place paths (tcp_connection.h): a send on an idle socket goes from the
// source straight to the socket, nothing staged; a receive into a destination (recvInto) reads
// the payload of large chunks from the socket straight into it. The counters of
// transports/tcp/testing.h tell the paths apart; the data is checked either way.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "transports/tcp/testing.h"
#include "transports/tcp/wire.h"
#include "unit/tcp/tcp_test_util.h"

namespace trnccl::transport::tcp::test {
namespace {

using tcp::testing::Event;

// Receives the current message into `in` with recvInto, waiting as the executor does.
Status receiveInto(Doorbell& bell, Connection& connection, std::vector<std::byte>& in) {
  const Deadline deadline = Deadline::after(30s);
  size_t got = 0;
  while (got < in.size()) {
    const uint32_t seen = bell.snapshot();
    Result<size_t> n = connection.recvInto(in.data(), in.size() - got);
    if (!n) return n.status();
    got += *n;
    if (*n > 0) continue;
    if (deadline.expired()) return Status(Code::kTimeout, "test: receive timed out");
    DoorbellSleeper sleeper(bell);
    Connection* const waitOn[] = {&connection};
    waitForNews(waitOn, sleeper, seen, 1ms);
  }
  return Status::ok();
}

// Sends `out` as message `tag` and waits until every byte reached the socket.
Status sendAll(Doorbell& bell, Connection& connection, uint64_t tag,
               const std::vector<std::byte>& out) {
  TRN_TRY(connection.beginSend(tag, out.size()));
  std::vector<SendOp> sends{{&connection, out.data(), out.size()}};
  std::vector<RecvOp> none;
  return drive(bell, sends, none);
}

TEST(TcpPaths, SmallSendOnAnIdleSocketIsNotStaged) {
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  std::vector<std::byte> out(1000), in(out.size());
  fillPattern(out, 3);
  CounterDelta<Event> delta;
  Connection* sender = cluster.conn(0, 0);
  ASSERT_TRUE(sender->beginSend(9, out.size()).isOk());
  Result<size_t> taken = sender->sendSome(out.data(), out.size());
  ASSERT_TRUE(taken.isOk()) << taken.status().message();
  EXPECT_EQ(*taken, out.size());
  EXPECT_EQ(delta.get(Event::kStaged), 0);
  EXPECT_EQ(delta.get(Event::kWrittenInPlace),
            static_cast<int64_t>(out.size() + sizeof(FrameHeader)));
  Connection* receiver = cluster.conn(1, 0);
  ASSERT_TRUE(receiver->beginRecv(9, in.size()).isOk());
  Status status = receiveInto(cluster.bell(1), *receiver, in);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(in, out);
  EXPECT_EQ(delta.get(Event::kReadInPlace), 0);  // a small chunk comes through the ring
}

class TcpReadInPlace : public ::testing::TestWithParam<int> {};

// Messages whose chunks are large, small, and both, received with recvInto while the sender
// streams them: every byte arrives in order, and the first message's full chunks (nothing read
// greedily into the ring before them) were read straight into the destination.
TEST_P(TcpReadInPlace, LargeChunksSkipTheRing) {
  EnvGuard sockets("TRNCCL_SOCKET_NSOCKS", std::to_string(GetParam()));
  EnvGuard buffer("TRNCCL_TCP_BUFFER_BYTES", std::to_string(256 << 10));
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  const std::vector<size_t> sizes = {3 * kChunkBytes + 5, 20000, 100,
                                     2 * kChunkBytes - 7, 1,     (3 << 20) + 1};
  CounterDelta<Event> delta;
  Status sent;
  std::thread sender([&] {
    for (size_t i = 0; i < sizes.size() && sent.isOk(); ++i) {
      std::vector<std::byte> out(sizes[i]);
      fillPattern(out, 100 + i);
      sent = sendAll(cluster.bell(0), *cluster.conn(0, 0), 100 + i, out);
    }
  });
  Status received;
  for (size_t i = 0; i < sizes.size() && received.isOk(); ++i) {
    std::vector<std::byte> in(sizes[i], std::byte{0xee}), expected(sizes[i]);
    fillPattern(expected, 100 + i);
    received = cluster.conn(1, 0)->beginRecv(100 + i, in.size());
    if (received.isOk()) received = receiveInto(cluster.bell(1), *cluster.conn(1, 0), in);
    if (received.isOk() && in != expected) {
      received = internalError("message {} of {} bytes differs", i, sizes[i]);
    }
  }
  sender.join();
  EXPECT_TRUE(sent.isOk()) << sent.message();
  EXPECT_TRUE(received.isOk()) << received.message();
  EXPECT_GE(delta.get(Event::kReadInPlace), static_cast<int64_t>(3 * kChunkBytes));
}

// A payload that comes through the inbound ring sits there as aligned as its message lays it
// out, even after the ring served an odd part of an earlier message whose rest was read
// straight into its destination (the ring's positions count those bytes too): a reduction then
// reads its operand in place, not through StepRun::apply's aligned copy.
TEST(TcpPaths, RingPayloadStaysAlignedAfterAnOddDirectRead) {
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  Connection* sender = cluster.conn(0, 0);
  Connection* receiver = cluster.conn(1, 0);
  std::vector<std::byte> a(1000), b(64 << 10), c(4096);
  fillPattern(a, 1);
  fillPattern(b, 2);
  fillPattern(c, 3);
  // A whole, and B's header with its first 1001 bytes: on loopback they are in the receiver's
  // socket once sendSome returns, so the receive of A reads them into the ring with it.
  ASSERT_TRUE(sender->beginSend(1, a.size()).isOk());
  Result<size_t> took = sender->sendSome(a.data(), a.size());
  ASSERT_TRUE(took.isOk() && *took == a.size());
  ASSERT_TRUE(sender->beginSend(2, b.size()).isOk());
  took = sender->sendSome(b.data(), 1001);
  ASSERT_TRUE(took.isOk() && *took == 1001);
  std::vector<std::byte> got(a.size());
  ASSERT_TRUE(receiver->beginRecv(1, a.size()).isOk());
  Status status = receiveInto(cluster.bell(1), *receiver, got);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(got, a);
  // B: 1001 bytes from the ring, the rest straight from the socket.
  std::thread rest([&] {
    std::vector<SendOp> sends{{sender, b.data() + 1001, b.size() - 1001}};
    std::vector<RecvOp> none;
    status = drive(cluster.bell(0), sends, none);
    if (status.isOk()) status = sendAll(cluster.bell(0), *sender, 3, c);
  });
  got.assign(b.size(), std::byte{0});
  ASSERT_TRUE(receiver->beginRecv(2, b.size()).isOk());
  Status received = receiveInto(cluster.bell(1), *receiver, got);
  EXPECT_TRUE(received.isOk()) << received.message();
  EXPECT_EQ(got, b);
  // C through the ring (recvSome): its first piece starts on a 4-byte boundary.
  ASSERT_TRUE(receiver->beginRecv(3, c.size()).isOk());
  got.assign(c.size(), std::byte{0});
  uintptr_t first = 1;
  const Consumer consume = [&](size_t off, const std::byte* p, size_t n) {
    if (off == 0) first = reinterpret_cast<uintptr_t>(p);
    std::memcpy(got.data() + off, p, n);
  };
  const Deadline deadline = Deadline::after(30s);
  for (size_t done = 0; done < c.size() && !deadline.expired();) {
    Result<size_t> n = receiver->recvSome(c.size() - done, consume);
    ASSERT_TRUE(n.isOk()) << n.status().message();
    done += *n;
    if (*n == 0) std::this_thread::sleep_for(100us);
  }
  rest.join();
  EXPECT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(got, c);
  EXPECT_EQ(first % 4, 0u) << "C's payload starts " << first % 4 << " bytes off alignment";
}

INSTANTIATE_TEST_SUITE_P(Sockets, TcpReadInPlace, ::testing::Values(1, 4),
                         [](const auto& info) { return fmt::format("{}sockets", info.param); });

}  // namespace
}  // namespace trnccl::transport::tcp::test
