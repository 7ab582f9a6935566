// The shm transport with ranks as threads of one process: ring exchanges of odd and large
// sizes through the FIFO and the same-process zero-copy path, error reporting, and segment
// hygiene.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <tuple>

#include "transports/shm/shm_connection.h"
#include "transports/shm/testing.h"
#include "unit/shm/shm_test_util.h"

namespace trnccl::transport::shm::test {
namespace {

constexpr size_t kFifo = 64 << 10;

class ShmRing : public ::testing::TestWithParam<std::tuple<int, bool>> {};

// Each rank sends to its next and its previous rank at once (one ring each way; with two ranks
// both directions of the one connection), every size of the list in turn.
TEST_P(ShmRing, ExchangesOddAndLargeSizesBothWays) {
  auto [n, zeroCopy] = GetParam();
  EnvGuard fifo("TRNCCL_SHM_FIFO_BYTES", std::to_string(kFifo));
  EnvGuard zcopy("TRNCCL_SHM_ZCOPY_BYTES", zeroCopy ? "262144" : "0");
  const std::vector<size_t> sizes = {0, 1, 7, 4096 + 3, kFifo * 3 + 5, (8 << 20) + 3};

  Cluster cluster(n);
  ASSERT_TRUE(cluster.connect([n](int r) { return ringPeers(r, n); }).isOk())
      << cluster.statuses[0].message();
  EXPECT_TRUE(leftoverSegments(cluster.hash).empty());

  Status status = cluster.runEach([&](int r) -> Status {
    for (size_t step = 0; step < sizes.size(); ++step) {
      TRN_TRY(exchangeStep(cluster.bell(r), r, step, sizes[step], cluster.links(r)));
    }
    return Status::ok();
  });
  EXPECT_TRUE(status.isOk()) << status.message();
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmRing,
                         ::testing::Combine(::testing::Values(2, 3, 4, 5, 8), ::testing::Bool()),
                         [](const auto& info) {
                           return fmt::format("{}ranks_{}", std::get<0>(info.param),
                                              std::get<1>(info.param) ? "zerocopy" : "copy");
                         });

// A rank with no shm peers still takes part in setup; the others connect around it.
TEST(ShmSetup, RankWithoutPeersTakesPart) {
  Cluster cluster(3);
  Status status =
      cluster.connect([](int r) { return r == 2 ? std::vector<int>{} : std::vector<int>{1 - r}; });
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_TRUE(cluster.connections[2].empty());
  std::vector<std::byte> out(1000), in(1000);
  fillPattern(out, 9);
  ASSERT_TRUE(cluster.conn(0, 0)->beginSend(1, out.size()).isOk());
  ASSERT_TRUE(cluster.conn(1, 0)->beginRecv(1, in.size()).isOk());
  std::vector<SendOp> sends{{cluster.conn(0, 0), out.data(), out.size()}};
  std::vector<RecvOp> recvs{{cluster.conn(1, 0), in.data(), in.size()}};
  ASSERT_TRUE(drive(cluster.ranks[0]->bell, sends, recvs).isOk());
  EXPECT_EQ(in, out);
}

// Large pieces between threads travel as a pointer: the consumer reads the sender's buffer
// itself, and the sender is not done before the receiver has consumed it.
TEST(ShmZeroCopy, SameProcessHandsOutTheSendersBuffer) {
  EnvGuard zcopy("TRNCCL_SHM_ZCOPY_BYTES", "262144");
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
  auto* sender = dynamic_cast<ShmConnection*>(cluster.conn(0, 0));
  ASSERT_NE(sender, nullptr);
  EXPECT_STREQ(sender->sendMode(), "zero-copy: same-process pointers");

  std::vector<std::byte> out(1 << 20);
  fillPattern(out, 3);
  CounterDelta<testing::Event> counted;
  ASSERT_TRUE(sender->beginSend(7, out.size()).isOk());
  Result<size_t> taken = sender->sendSome(out.data(), out.size());
  ASSERT_TRUE(taken.isOk());
  EXPECT_EQ(*taken, out.size());  // one descriptor, whatever the FIFO size
  EXPECT_FALSE(sender->sendDone().value());

  Connection* receiver = cluster.conn(1, 0);
  ASSERT_TRUE(receiver->beginRecv(7, out.size()).isOk());
  size_t seen = 0;
  bool inPlace = true;
  Result<size_t> got =
      receiver->recvSome(out.size(), [&](size_t offset, const std::byte* data, size_t bytes) {
        inPlace &= data == out.data() + offset;
        seen += bytes;
      });
  ASSERT_TRUE(got.isOk()) << got.status().message();
  EXPECT_EQ(*got, out.size());
  EXPECT_EQ(seen, out.size());
  EXPECT_TRUE(inPlace);
  EXPECT_TRUE(sender->sendDone().value());
  EXPECT_EQ(counted.get(testing::Event::kPointerDescriptors), 1);
}

// The default threshold is 32 KiB, half the collectives' slice (issue 14): a 32 KiB piece
// goes by descriptor, one 4 bytes smaller through the FIFO. At 64 KiB, a 2-rank 64 KiB
// all-gather copied each rank's 32 KiB into the FIFO and out again.
TEST(ShmZeroCopy, DefaultThresholdIsHalfTheSlice) {
  const char* set = std::getenv("TRNCCL_SHM_ZCOPY_BYTES");
  if (set != nullptr) GTEST_SKIP() << "TRNCCL_SHM_ZCOPY_BYTES is set (" << set << ")";
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
  for (size_t bytes : {size_t{32 << 10}, size_t{(32 << 10) - 4}}) {
    SCOPED_TRACE(bytes);
    std::vector<std::byte> out(bytes), in(bytes);
    fillPattern(out, 5);
    CounterDelta<testing::Event> counted;
    ASSERT_TRUE(cluster.conn(0, 0)->beginSend(9, bytes).isOk());
    ASSERT_TRUE(cluster.conn(1, 0)->beginRecv(9, bytes).isOk());
    std::vector<SendOp> sends{{cluster.conn(0, 0), out.data(), bytes}};
    std::vector<RecvOp> recvs{{cluster.conn(1, 0), in.data(), bytes}};
    ASSERT_TRUE(drive(cluster.ranks[0]->bell, sends, recvs).isOk());
    EXPECT_EQ(in, out);
    const bool inPlace = bytes >= (32 << 10);
    EXPECT_EQ(counted.get(testing::Event::kPointerDescriptors), inPlace ? 1 : 0);
    EXPECT_EQ(counted.get(testing::Event::kInlineRecords), inPlace ? 0 : 1);
  }
}

// Sends `out` as one message and receives it whole; returns the rings of the sender's doorbell
// during the receive. `waitFirst`: the sender first finds it must wait (sendDone() false).
size_t ringsWhileReceiving(Cluster& cluster, uint64_t tag, const std::vector<std::byte>& out,
                           bool waitFirst) {
  Connection* sender = cluster.conn(0, 0);
  Connection* receiver = cluster.conn(1, 0);
  std::vector<std::byte> in(out.size());
  EXPECT_TRUE(sender->beginSend(tag, out.size()).isOk());
  EXPECT_EQ(sender->sendSome(out.data(), out.size()).value(), out.size());  // one piece
  if (waitFirst) {
    EXPECT_FALSE(sender->sendDone().value());
  }
  const uint32_t before = cluster.ranks[0]->bell.snapshot();
  EXPECT_TRUE(receiver->beginRecv(tag, in.size()).isOk());
  EXPECT_EQ(receiver->recvInto(in.data(), in.size()).value(), in.size());
  const uint32_t rings = cluster.ranks[0]->bell.snapshot() - before;
  EXPECT_EQ(in, out);
  EXPECT_TRUE(sender->sendDone().value());
  return rings;
}

// A receiver rings the sender's doorbell only when the sender asked, having found too little
// room or an unacknowledged descriptor. A message the sender does not wait for, inline or
// described, is no ring: until session 12 each was one, which woke a sender sleeping for the
// receiver's own message for nothing (three and two rings before session 7; issue 14).
TEST(ShmDoorbell, ReceiverRingsNoSenderThatDoesNotWait) {
  const char* set = std::getenv("TRNCCL_SHM_ZCOPY_BYTES");
  if (set != nullptr) GTEST_SKIP() << "TRNCCL_SHM_ZCOPY_BYTES is set (" << set << ")";
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
  uint64_t tag = 1;
  for (size_t bytes : {size_t{64 << 10}, size_t{8 << 10}, size_t{64 << 10}}) {
    SCOPED_TRACE(bytes);
    std::vector<std::byte> out(bytes);
    fillPattern(out, static_cast<int>(tag));
    CounterDelta<testing::Event> counted;
    EXPECT_EQ(ringsWhileReceiving(cluster, tag++, out, false), 0u);
    const bool described = bytes >= kDefaultZcopyBytes;
    EXPECT_EQ(counted.get(testing::Event::kPointerDescriptors), described ? 1 : 0);
    EXPECT_EQ(counted.get(testing::Event::kInlineRecords), described ? 0 : 1);
  }
}

// ... and one that waits for an acknowledgement, or for room, is rung once by the receive that
// releases it (each ring a wake-up system call while it sleeps: one per message since session 7).
TEST(ShmDoorbell, ReceiverRingsASenderThatWaitsOnce) {
  const char* set = std::getenv("TRNCCL_SHM_ZCOPY_BYTES");
  if (set != nullptr) GTEST_SKIP() << "TRNCCL_SHM_ZCOPY_BYTES is set (" << set << ")";
  {
    Cluster cluster(2);
    ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
    std::vector<std::byte> out(64 << 10);
    fillPattern(out, 3);
    CounterDelta<testing::Event> counted;
    EXPECT_EQ(ringsWhileReceiving(cluster, 1, out, true), 1u) << "acknowledgement";
    EXPECT_EQ(counted.get(testing::Event::kPointerDescriptors), 1);
    EXPECT_EQ(ringsWhileReceiving(cluster, 2, out, false), 0u) << "no longer waits";
  }
  // Room: an 8 KiB message, then a larger one than the FIFO; the receive of the first frees
  // room the second waits for.
  EnvGuard fifo("TRNCCL_SHM_FIFO_BYTES", std::to_string(kFifo));
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
  Connection* sender = cluster.conn(0, 0);
  Connection* receiver = cluster.conn(1, 0);
  std::vector<std::byte> first(8 << 10), firstIn(first.size());
  std::vector<std::byte> big(4 * kFifo + 5), bigIn(big.size());
  fillPattern(first, 4);
  fillPattern(big, 5);
  ASSERT_TRUE(sender->beginSend(1, first.size()).isOk());
  ASSERT_EQ(sender->sendSome(first.data(), first.size()).value(), first.size());
  ASSERT_TRUE(sender->beginSend(2, big.size()).isOk());
  // Offered 4 KiB at a time: inline pieces (a descriptor would always fit), until the FIFO is full.
  size_t sent = 0;
  for (size_t took = 1; took != 0; sent += took) {
    took = sender->sendSome(big.data() + sent, std::min<size_t>(4096, big.size() - sent)).value();
  }
  ASSERT_LT(sent, big.size());
  uint32_t before = cluster.ranks[0]->bell.snapshot();
  ASSERT_TRUE(receiver->beginRecv(1, firstIn.size()).isOk());
  ASSERT_EQ(receiver->recvInto(firstIn.data(), firstIn.size()).value(), firstIn.size());
  EXPECT_EQ(cluster.ranks[0]->bell.snapshot() - before, 1u) << "room";
  EXPECT_EQ(firstIn, first);
  // The rest goes through; once the sender no longer waits, a receive rings nothing.
  ASSERT_TRUE(receiver->beginRecv(2, bigIn.size()).isOk());
  size_t received = 0;
  while (received < bigIn.size()) {
    sent += sender->sendSome(big.data() + sent, std::min<size_t>(4096, big.size() - sent)).value();
    received += receiver->recvInto(bigIn.data(), bigIn.size() - received).value();  // base
  }
  EXPECT_EQ(bigIn, big);
  std::vector<std::byte> last(8 << 10);
  fillPattern(last, 6);
  EXPECT_EQ(ringsWhileReceiving(cluster, 3, last, false), 0u);
}

TEST(ShmErrors, TagMismatchNamesPeerTagsAndSizes) {
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
  std::vector<std::byte> out(4096);
  ASSERT_TRUE(cluster.conn(0, 0)->beginSend(0x11, out.size()).isOk());
  ASSERT_TRUE(cluster.conn(0, 0)->sendSome(out.data(), out.size()).isOk());
  ASSERT_TRUE(cluster.conn(1, 0)->beginRecv(0x22, 8192).isOk());
  Result<size_t> got = cluster.conn(1, 0)->recvSome(8192, [](size_t, const std::byte*, size_t) {});
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(got.status().code(), Code::kInternalError);
  EXPECT_EQ(got.status().peer(), 0);
  EXPECT_EQ(got.status().message(),
            "shm: from rank 0: message has tag 0x11 and 4096 bytes, expected tag 0x22 and 8192 "
            "bytes");
}

// The segment is 0600 and present while peers attach; after connect() nothing is left.
TEST(ShmHygiene, SegmentIsPrivateAndUnlinkedAfterConnect) {
  std::mutex mutex;
  std::vector<std::string> names;
  std::vector<unsigned> modes;
  testing::setSegmentCreatedHook([&](int fd, const std::string& name) {
    struct stat st {};
    ::fstat(fd, &st);
    std::lock_guard lock(mutex);
    names.push_back(name);
    modes.push_back(st.st_mode & 0777);
  });
  Cluster cluster(4);
  Status status = cluster.connect([](int r) {
    std::vector<int> peers;
    for (int p = 0; p < 4; ++p) {
      if (p != r) peers.push_back(p);
    }
    return peers;
  });
  testing::setSegmentCreatedHook(nullptr);
  ASSERT_TRUE(status.isOk()) << status.message();
  ASSERT_EQ(names.size(), 4u);
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(names[i].rfind(fmt::format("/trnccl-{:016x}-r", cluster.hash), 0), 0u) << names[i];
    EXPECT_EQ(modes[i], 0600u) << names[i];
  }
  EXPECT_TRUE(leftoverSegments(cluster.hash).empty());
}

// A FIFO size no tmpfs can hold fails at setup with a clear Status, not SIGBUS later.
TEST(ShmHygiene, AllocationFailureIsAStatus) {
  EnvGuard fifo("TRNCCL_SHM_FIFO_BYTES", std::to_string(int64_t{1} << 40));
  Cluster cluster(2);
  Status status = cluster.connect([](int r) { return std::vector<int>{1 - r}; });
  ASSERT_FALSE(status.isOk());
  for (const Status& s : cluster.statuses) {
    EXPECT_EQ(s.code(), Code::kSystemError) << s.message();
    EXPECT_NE(s.message().find("shm: cannot allocate"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("/trnccl-"), std::string::npos) << s.message();
    bool reason = s.message().find(std::strerror(ENOSPC)) != std::string::npos ||
                  s.message().find(std::strerror(EFBIG)) != std::string::npos;
    EXPECT_TRUE(reason) << s.message();
  }
  EXPECT_TRUE(leftoverSegments(cluster.hash).empty());
}

// One rank's setup error fails every rank (no hang), and the others name it.
TEST(ShmErrors, OneRankFailingFailsAll) {
  Cluster cluster(3);
  Status status = cluster.connect(
      [](int r) { return r == 1 ? std::vector<int>{1} : std::vector<int>{(r + 1) % 3}; });
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(cluster.statuses[1].code(), Code::kInvalidArgument) << cluster.statuses[1].message();
  for (int r : {0, 2}) {
    EXPECT_EQ(cluster.statuses[static_cast<size_t>(r)].code(), Code::kRemoteError);
    EXPECT_EQ(cluster.statuses[static_cast<size_t>(r)].peer(), 1);
  }
  EXPECT_TRUE(leftoverSegments(cluster.hash).empty());
}

TEST(ShmSetup, CanConnectNeedsSameHostAndKernel) {
  auto transport = makeShmTransport();
  PeerInfo a, b;
  a.hostHash = b.hostHash = 1;
  a.bootId = b.bootId = 2;
  EXPECT_TRUE(transport->canConnect(a, b));
  b.bootId = 3;
  EXPECT_FALSE(transport->canConnect(a, b));
  b.bootId = 2;
  b.hostHash = 5;
  EXPECT_FALSE(transport->canConnect(a, b));
  EXPECT_STREQ(transport->name(), "shm");
}

}  // namespace
}  // namespace trnccl::transport::shm::test
