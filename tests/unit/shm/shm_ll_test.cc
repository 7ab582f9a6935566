// The shm low-latency protocol (transports/shm/ll.h): which sizes take it, many messages back to
// back both ways (also through an LL area smaller than one message), the wrap of its 32-bit
// sequence numbers, no doorbell per message, and a sleeping receiver woken by a late sender.
#include <gtest/gtest.h>

#include <thread>

#include "shm_test_util.h"
#include "transports/shm/ll.h"
#include "transports/shm/testing.h"

namespace trnccl::transport::shm::test {
namespace {

using Event = testing::Event;

// Exchanges one message of each size both ways between two ranks; returns the LL messages and
// inline records the receivers counted.
struct Paths {
  int64_t ll = 0;
  int64_t inlined = 0;
};
Paths exchange(const std::vector<size_t>& sizes) {
  Cluster cluster(2);
  Status status = cluster.connect([](int r) { return std::vector<int>{1 - r}; });
  EXPECT_TRUE(status.isOk()) << status.message();
  CounterDelta<Event> counted;
  status = cluster.runEach([&](int r) -> Status {
    for (size_t step = 0; step < sizes.size(); ++step) {
      TRN_TRY(exchangeStep(cluster.bell(r), r, step, sizes[step], cluster.links(r)));
    }
    return Status::ok();
  });
  EXPECT_TRUE(status.isOk()) << status.message();
  return {counted.get(Event::kLlMessages), counted.get(Event::kInlineRecords)};
}

TEST(ShmLl, SizesUpToTheThresholdTakeIt) {
  EnvGuard ll("TRNCCL_SHM_LL_THRESHOLD", "1000");
  EXPECT_EQ(exchange({999}).ll, 2);
  EXPECT_EQ(exchange({1000}).ll, 2);
  Paths above = exchange({1001});
  EXPECT_EQ(above.ll, 0);
  EXPECT_EQ(above.inlined, 2);
}

TEST(ShmLl, DefaultThresholdAndZeroDisables) {
  // 256 bytes since session 9: at 512 B the FIFO was faster (transports/shm/README.md).
  EXPECT_EQ(exchange({1, 256}).ll, 4);
  EXPECT_EQ(exchange({257}).ll, 0);
  EXPECT_EQ(exchange({512}).ll, 0);
  EnvGuard off("TRNCCL_SHM_LL_THRESHOLD", "0");
  Paths disabled = exchange({8, 100});
  EXPECT_EQ(disabled.ll, 0);
  EXPECT_EQ(disabled.inlined, 4);
}

TEST(ShmLl, NegativeThresholdIsAnError) {
  EnvGuard ll("TRNCCL_SHM_LL_THRESHOLD", "-1");
  Cluster cluster(2);
  Status status = cluster.connect([](int r) { return std::vector<int>{1 - r}; });
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("TRNCCL_SHM_LL_THRESHOLD=-1"), std::string::npos)
      << status.message();
}

// Thousands of messages each way, sizes 1 .. 600 (odd ones too) with a FIFO-size message mixed
// in every 50th; the sender runs ahead of the receiver as far as the LL area lets it. With
// 4 KiB FIFOs the LL area holds 8 lines: messages up to its maxBytes (432: a header line with
// 40 bytes, 7 lines of 56) fill it whole, so
// partial writes and the lazily published tail must keep both sides moving, and larger ones
// take the FIFO.
void streamBothWays(uint64_t fifoBytes, size_t count) {
  EnvGuard fifo("TRNCCL_SHM_FIFO_BYTES", std::to_string(fifoBytes));
  EnvGuard ll("TRNCCL_SHM_LL_THRESHOLD", "1024");
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
  auto sizeOf = [](size_t i) { return i % 50 == 49 ? size_t{3000} : (i * 37) % 600 + 1; };
  std::vector<std::byte> region(fifoBytes);
  uint64_t limit = std::min<uint64_t>(1024, llArea(region.data(), fifoBytes, 1024).maxBytes());
  int64_t expected = 0;
  for (size_t i = 0; i < count; ++i) expected += sizeOf(i) <= limit ? 2 : 0;
  CounterDelta<Event> counted;
  Status status = cluster.runEach([&](int r) {
    return streamMessages(cluster.bell(r), r, 1 - r, cluster.conn(r, 0), count, sizeOf);
  });
  EXPECT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(counted.get(Event::kLlMessages), expected);
}

TEST(ShmLl, ManyMessagesBackToBackBothWays) { streamBothWays(1 << 20, 4000); }

TEST(ShmLl, SmallAreaCapsTheThreshold) {
  std::vector<std::byte> region(4096);
  EXPECT_EQ(llArea(region.data(), region.size(), 1024).maxBytes(), 432u);
  streamBothWays(4096, 1000);
}

// The header line carries a message's first 40 bytes: up to 40 bytes is one line (one cache line
// between the cores), 41 is two. An area of 8 lines takes eight 40-byte messages before its
// reader consumes any, and four of 41 bytes; with a header line of its own, 40 bytes took two.
TEST(ShmLl, MessagesOfUpTo40BytesTakeOneLine) {
  EXPECT_EQ(llMessageLines(1), 1u);
  EXPECT_EQ(llMessageLines(40), 1u);
  EXPECT_EQ(llMessageLines(41), 2u);
  EXPECT_EQ(llMessageLines(96), 2u);
  EXPECT_EQ(llMessageLines(97), 3u);
  for (size_t bytes : {size_t{40}, size_t{41}}) {
    std::vector<std::byte> region(4096);
    initLlArea(region.data(), region.size(), 1024);
    const LlArea area = llArea(region.data(), region.size(), 1024);
    ASSERT_EQ(area.count, 8u);
    DoorbellWord bell;
    LlWriter writer(area, &bell);
    LlReader reader(area, &bell, 0);
    std::vector<std::byte> out(bytes);
    const size_t fit = bytes <= kLlHeaderData ? 8 : 4;
    for (size_t i = 0; i <= fit; ++i) {
      fillPattern(out, static_cast<int>(i));
      writer.begin(0x100 + i, bytes, i + 1);
      EXPECT_EQ(writer.write(out.data(), bytes, 0), i < fit ? bytes : 0u) << bytes << " B #" << i;
    }
    for (size_t i = 0; i < fit; ++i) {  // each comes back whole, in order
      std::vector<std::byte> want(bytes), got(bytes);
      fillPattern(want, static_cast<int>(i));
      reader.begin(bytes);
      Result<size_t> n = reader.readInto(got.data(), bytes, 0, 0x100 + i);
      ASSERT_TRUE(n.isOk()) << n.status().message();
      EXPECT_EQ(*n, bytes);
      EXPECT_EQ(got, want) << bytes << " B #" << i;
    }
  }
}

// Sequence numbers are 32 bits and skip 0 (the value of never-written lines): start 20 short of
// the wrap and cross it. Without the skip, message 21's header would match the zeroed lines.
TEST(ShmLl, SequenceNumbersWrap) {
  testing::setLlFirstSeq(0xffff'ffffu - 20);
  Cluster cluster(2);
  Status status = cluster.connect([](int r) { return std::vector<int>{1 - r}; });
  testing::setLlFirstSeq(0);
  ASSERT_TRUE(status.isOk()) << status.message();
  CounterDelta<Event> counted;
  status = cluster.runEach([&](int r) {
    return streamMessages(cluster.bell(r), r, 1 - r, cluster.conn(r, 0), 100,
                          [](size_t i) { return i % 13 + 1; });
  });
  EXPECT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(counted.get(Event::kLlMessages), 200);
}

// An LL message does not touch the receiver's doorbell while nobody sleeps on it; a FIFO
// message rings it (so the check below can tell).
TEST(ShmLl, NoDoorbellPerMessage) {
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
  std::vector<std::byte> out(64), in(64);
  auto sendOne = [&](size_t bytes, uint64_t tag) {
    out.resize(bytes);
    in.resize(bytes);
    ASSERT_TRUE(cluster.conn(0, 0)->beginSend(tag, bytes).isOk());
    ASSERT_TRUE(cluster.conn(1, 0)->beginRecv(tag, bytes).isOk());
    ASSERT_EQ(offer(*cluster.conn(0, 0), out.data(), bytes).value(), bytes);
  };
  uint32_t before = cluster.bell(1).snapshot();
  for (uint64_t i = 0; i < 100; ++i) {
    sendOne(64, i);
    std::vector<SendOp> sends = {{cluster.conn(0, 0), out.data(), 64, 64}};
    std::vector<RecvOp> recvs = {{cluster.conn(1, 0), in.data(), 64}};
    ASSERT_TRUE(drive(cluster.bell(1), sends, recvs).isOk());
  }
  EXPECT_EQ(cluster.bell(1).snapshot(), before);
  sendOne(8192, 100);
  EXPECT_NE(cluster.bell(1).snapshot(), before);
}

// The receiver polls, announces itself and sleeps with a 10 s bound; the sender writes 300 ms
// later and must wake it: finishing takes far less than the bound (which a lost wake-up costs).
TEST(ShmLl, SleepingReceiverWokenByLateSender) {
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
  std::vector<std::byte> out(40), in(40);
  fillPattern(out, 3);
  ASSERT_TRUE(cluster.conn(1, 0)->beginRecv(0x77, in.size()).isOk());
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_TRUE(cluster.conn(0, 0)->beginSend(0x77, out.size()).isOk());
    EXPECT_EQ(offer(*cluster.conn(0, 0), out.data(), out.size()).value(), out.size());
  });
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs = {{cluster.conn(1, 0), in.data(), in.size()}};
  auto start = Clock::now();
  Status status = drive(cluster.bell(1), sends, recvs, Deadline::after(std::chrono::seconds(30)),
                        std::chrono::seconds(10));
  auto took = Clock::now() - start;
  late.join();
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(in, out);
  EXPECT_LT(took, std::chrono::seconds(8));
}

// Sizes on the two sides that straddle the threshold fail with the header mismatch, whichever
// side takes the LL path, instead of waiting for a message on the path not taken.
TEST(ShmLl, SizesStraddlingTheThresholdFail) {
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
  std::vector<std::byte> out(8192);
  ASSERT_TRUE(cluster.conn(0, 0)->beginSend(0x11, 8192).isOk());
  ASSERT_EQ(offer(*cluster.conn(0, 0), out.data(), 8192).value(), 8192u);
  ASSERT_TRUE(cluster.conn(1, 0)->beginRecv(0x11, 64).isOk());
  Result<size_t> got = cluster.conn(1, 0)->recvSome(64, [](size_t, const std::byte*, size_t) {});
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(got.status().message(),
            "shm: from rank 0: message has tag 0x11 and 8192 bytes, expected tag 0x11 and 64 "
            "bytes");
  // The other way round: an LL message where the receiver expects a FIFO one.
  ASSERT_TRUE(cluster.conn(1, 0)->beginSend(0x22, 64).isOk());
  ASSERT_EQ(offer(*cluster.conn(1, 0), out.data(), 64).value(), 64u);
  ASSERT_TRUE(cluster.conn(0, 0)->beginRecv(0x22, 8192).isOk());
  got = cluster.conn(0, 0)->recvSome(8192, [](size_t, const std::byte*, size_t) {});
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(got.status().message(),
            "shm: from rank 1: message has tag 0x22 and 64 bytes, expected tag 0x22 and 8192 "
            "bytes");
}

}  // namespace
}  // namespace trnccl::transport::shm::test
