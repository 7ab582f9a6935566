// The ofi transport between ranks as threads, once per libfabric provider (tcp, which
// libfabric layers under ofi_rxm, and shm); a provider this machine lacks is skipped with
// fi_getinfo's reason.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transports/ofi/ofi_connection.h"
#include "transports/ofi/testing.h"
#include "transports/ofi/wire.h"
#include "unit/ofi/ofi_test_util.h"

namespace trnccl::transport::ofi::test {
namespace {

const std::vector<size_t> kSizes = {1, 7, 4096 + 3, (3 << 20) + 5, (8 << 20) + 3};

using OfiTransportTest = PerProvider;

uint64_t seedOf(int from, int to, size_t size) {
  return (uint64_t(from) << 40) ^ (uint64_t(to) << 32) ^ size;
}

// One exchange step per size, in order, on every rank of a connected cluster.
Status exchangeEach(Cluster& cluster, const std::vector<size_t>& sizes) {
  return cluster.runEach([&](int r) -> Status {
    for (size_t i = 0; i < sizes.size(); ++i) {
      TRN_TRY(exchangeStep(cluster.bell(r), r, i, sizes[i], cluster.links(r)));
    }
    return Status::ok();
  });
}

// Every rank sends each size to both ring neighbours at once and receives from both.
void ringExchange(int n) {
  Cluster cluster(n);
  ASSERT_TRUE(cluster.connect([n](int r) { return ringPeers(r, n); }).isOk())
      << cluster.statuses[0].message();
  Status status = exchangeEach(cluster, kSizes);
  EXPECT_TRUE(status.isOk()) << status.message();
}

TEST_P(OfiTransportTest, RingExchange2) { ringExchange(2); }
TEST_P(OfiTransportTest, RingExchange3) { ringExchange(3); }
TEST_P(OfiTransportTest, RingExchange4) { ringExchange(4); }
TEST_P(OfiTransportTest, RingExchange3ZeroCopy) {
  EnvGuard zcopy("TRNCCL_OFI_ZCOPY_BYTES", "65536");
  ringExchange(3);
}
// As efa would have it (FI_MR_LOCAL): registered rings, slots and headers; host buffers
// copied despite the zero-copy bound (ofi_zero_copy_test.cc checks which path was taken).
TEST_P(OfiTransportTest, RingExchange3MrLocal) {
  EnvGuard mrLocal("TRNCCL_OFI_MR_LOCAL", "1");
  EnvGuard zcopy("TRNCCL_OFI_ZCOPY_BYTES", "65536");
  ringExchange(3);
}
TEST_P(OfiTransportTest, RingExchange3SmallPiecesAndRing) {
  EnvGuard piece("TRNCCL_OFI_PIECE_BYTES", "65536");
  EnvGuard ring("TRNCCL_OFI_BUFFER_BYTES", "200000");
  ringExchange(3);
}

// Many messages in a row: header and data slots are reposted and wrap around many times, and
// pieces smaller than a slot arrive as the sender offers them.
TEST_P(OfiTransportTest, ManyMessagesInDribbles) {
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
  Status status = cluster.runEach([&](int r) -> Status {
    Connection* c = cluster.connTo(r, 1 - r);
    std::mt19937 random(77);
    for (int m = 0; m < 60; ++m) {
      size_t size = 1 + random() % 20000;
      std::vector<std::byte> out(size), in(size), expected(size);
      fillPattern(out, seedOf(r, m, size));
      fillPattern(expected, seedOf(1 - r, m, size));
      TRN_TRY(c->beginSend(m, size));
      TRN_TRY(c->beginRecv(m, size));
      // Offer the message in up to four parts, the way a forwarding step offers produced bytes.
      size_t offered = 0;
      std::vector<RecvOp> recvs = {{c, in.data(), size}};
      auto until = Deadline::after(30s);
      while (offered < size) {
        size_t part = std::min(size - offered, size / 4 + 1);
        Result<size_t> taken = offer(*c, out.data() + offered, part, until);
        if (!taken) return taken.status();
        if (*taken < part) return Status(Code::kTimeout, "test: sendSome took nothing");
        offered += part;
      }
      std::vector<SendOp> sends = {{c, out.data(), size, size}};
      TRN_TRY(drive(cluster.bell(r), sends, recvs));
      if (in != expected) return internalError("rank {} message {} differs", r, m);
    }
    return Status::ok();
  });
  EXPECT_TRUE(status.isOk()) << status.message();
}

// Messages up to the inline bound travel inside their header, one message each; larger ones as
// a header and pieces. The bound is 64 KiB less the header over libfabric's native tcp provider
// (no eager limit: a 32 KiB message is one header message), 16 KiB less the header elsewhere
// (rxm's default eager limit), and TRNCCL_OFI_INLINE_BYTES sets it. Sizes on both sides of the
// edge arrive intact, and so do 200 small messages streamed back to back (the sender runs ahead
// through every header slot, which the receiver reposts as it consumes them).
TEST_P(OfiTransportTest, InlineMessages) {
  using testing::Event;
  for (const char* env : {"", "1000"}) {
    std::optional<EnvGuard> bound;
    if (*env != '\0') bound.emplace("TRNCCL_OFI_INLINE_BYTES", env);
    Cluster cluster(2);
    ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
    const size_t inlined = inlineBytesOf(cluster);
    const auto* self = static_cast<OfiConnection*>(cluster.connTo(0, 1));
    const bool native = nativeTcp(self->endpoint().info());
    EXPECT_EQ(inlined, *env != '\0' ? 1000 : native ? kNativeInlineBytes : kInlineBytes);
    const std::vector<size_t> sizes = {1, inlined - 1, inlined, inlined + 1, 2 * inlined};
    CounterDelta<Event> edge;
    Status status = exchangeEach(cluster, sizes);
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(edge.get(Event::kInlineMessages), 2 * 3);  // both ranks, the three inline sizes
    // One piece each for the two larger, copied or read in place (over net from 64 KiB:
    // provider.h zeroCopyBytes), the header leading it either way.
    EXPECT_EQ(edge.get(Event::kCopiedPieces) + edge.get(Event::kZeroCopyPieces), 2 * 2);
    EXPECT_EQ(edge.get(Event::kLeadingHeaders), 2 * 2);

    CounterDelta<Event> streamed;
    status = cluster.runEach([&](int r) {
      return streamMessages(cluster.bell(r), r, 1 - r, cluster.connTo(r, 1 - r), 200,
                            [&](size_t i) { return 1 + i * 37 % inlined; });
    });
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(streamed.get(Event::kInlineMessages), 2 * 200);
    EXPECT_EQ(streamed.get(Event::kCopiedPieces), 0);
  }
}

// An inline message that fits the provider's inject size goes with fi_tinject: no send
// completion, so its header slot is free at once and sendDone() is true without reading the
// queue; 200 such messages streamed back to back (more than the 16 slots) arrive intact and in
// order. Larger inline messages are posted as before (so is one the provider refuses for now),
// and TRNCCL_OFI_INJECT=0 injects nothing.
TEST_P(OfiTransportTest, SmallMessagesAreInjected) {
  using testing::Event;
  for (bool enabled : {true, false}) {
    EnvGuard inject("TRNCCL_OFI_INJECT", enabled ? "1" : "0");
    Cluster cluster(2);
    ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
    const size_t limit =
        static_cast<OfiConnection*>(cluster.connTo(0, 1))->endpoint().injectBytes();
    ASSERT_EQ(limit == 0, !enabled);
    const size_t small = enabled ? std::max<size_t>(limit, kHeaderBytes + 1) - kHeaderBytes : 1;
    // The first message waits for the connection (rxm connects on it: fi_tinject says again).
    ASSERT_TRUE(exchangeEach(cluster, {inlineBytesOf(cluster) + 1}).isOk());
    CounterDelta<Event> sent;
    Status status = exchangeEach(cluster, {1, small, small + 1, inlineBytesOf(cluster)});
    ASSERT_TRUE(status.isOk()) << status.message();
    const bool fits = enabled && limit > kHeaderBytes;
    EXPECT_EQ(sent.get(Event::kInjectedMessages), fits ? 2 * 2 : 0);  // both ranks: 1 and small
    EXPECT_EQ(sent.get(Event::kInlineMessages), 2 * 4);

    CounterDelta<Event> streamed;
    status = cluster.runEach([&](int r) {
      return streamMessages(cluster.bell(r), r, 1 - r, cluster.connTo(r, 1 - r), 200,
                            [&](size_t i) { return 1 + i % small; });
    });
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(streamed.get(Event::kInjectedMessages), fits ? 2 * 200 : 0);
  }
}

// Larger messages go as pieces, the header inside the first (wire.h kLeads): a message of k
// pieces' payload takes k pieces, not k + 1. Every size around each bound (inline, one piece,
// two pieces) arrives intact, and so do 300 messages streamed back to back across those sizes,
// many pieces in flight (the sender runs up to a ring of 16 pieces ahead), delivered in order.
// The ring holds the largest message whole, so no piece is cut short by ring room. The inline
// bound is rxm's (below the piece size) on every provider.
TEST_P(OfiTransportTest, HeaderLeadsTheFirstPiece) {
  using testing::Event;
  constexpr size_t kPiece = 20000;
  EnvGuard bound("TRNCCL_OFI_INLINE_BYTES", std::to_string(kInlineBytes));
  EnvGuard piece("TRNCCL_OFI_PIECE_BYTES", std::to_string(kPiece));
  EnvGuard ring("TRNCCL_OFI_BUFFER_BYTES", std::to_string(16 * kPiece));
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
  const std::vector<size_t> sizes = {kInlineBytes, kInlineBytes + 1, kPiece - 1,
                                     kPiece,       kPiece + 1,       2 * kPiece - 1,
                                     2 * kPiece,   2 * kPiece + 1,   9 * kPiece + 7};
  size_t pieces = 0, large = 0;
  for (size_t size : sizes) {
    pieces += size <= kInlineBytes ? 0 : (size + kPiece - 1) / kPiece;
    large += size > kInlineBytes ? 1 : 0;
  }
  CounterDelta<Event> edges;
  Status status = exchangeEach(cluster, sizes);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(edges.get(Event::kCopiedPieces), static_cast<int64_t>(2 * pieces));
  EXPECT_EQ(edges.get(Event::kInlineMessages), 2);
  EXPECT_EQ(edges.get(Event::kLeadingHeaders), static_cast<int64_t>(2 * large));

  status = cluster.runEach([&](int r) {
    return streamMessages(cluster.bell(r), r, 1 - r, cluster.connTo(r, 1 - r), 300,
                          [&](size_t i) { return sizes[i % sizes.size()] + i % 3; });
  });
  EXPECT_TRUE(status.isOk()) << status.message();
}

// The ranks disagree on a message's size across the inline bound: the receiver finds the
// message on the other stream and fails with both sizes, in either direction, instead of
// waiting for a message that never comes.
TEST_P(OfiTransportTest, SizesAcrossTheInlineBoundFail) {
  for (bool largeSent : {true, false}) {
    Cluster cluster(2);
    ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
    const size_t inlined = inlineBytesOf(cluster);
    const size_t sent = largeSent ? inlined + 100 : 100;
    const size_t expected = largeSent ? 100 : inlined + 100;
    // A large message first, so the receiver's data slots exist either way.
    expectSizeMismatchFails(cluster, inlined + 1, sent, expected);
  }
}

// A receiver expecting another tag or size fails with both in the message, naming the peer.
TEST_P(OfiTransportTest, MismatchFails) {
  for (bool sizeOnly : {false, true}) {
    Cluster cluster(2);
    ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
    std::vector<std::byte> out(64), in(64);
    Status status = cluster.runEach([&](int r) -> Status {
      Connection* c = cluster.connTo(r, 1 - r);
      if (r == 0) {
        TRN_TRY(c->beginSend(0x1234, 64));
        std::vector<SendOp> sends = {{c, out.data(), 64}};
        std::vector<RecvOp> none;
        return drive(cluster.bell(r), sends, none);
      }
      TRN_TRY(c->beginRecv(sizeOnly ? 0x1234 : 0x5678, sizeOnly ? 32 : 64));
      std::vector<SendOp> none;
      std::vector<RecvOp> recvs = {{c, in.data(), sizeOnly ? 32u : 64u}};
      return drive(cluster.bell(r), none, recvs, Deadline::after(10s));
    });
    EXPECT_TRUE(cluster.statuses[0].isOk()) << cluster.statuses[0].message();
    const Status& got = cluster.statuses[1];
    EXPECT_EQ(got.code(), Code::kInternalError) << got.message();
    EXPECT_EQ(got.peer(), 0);
    EXPECT_NE(got.message().find("0x1234"), std::string::npos) << got.message();
    EXPECT_NE(got.message().find(sizeOnly ? "32 bytes" : "0x5678"), std::string::npos)
        << got.message();
    EXPECT_NE(got.message().find("rank 0"), std::string::npos) << got.message();
  }
}

// A rank without ofi peers still takes part in setup; the others connect normally.
TEST_P(OfiTransportTest, RankWithoutPeers) {
  Cluster cluster(3);
  Status status =
      cluster.connect([](int r) { return r == 2 ? std::vector<int>{} : std::vector<int>{1 - r}; });
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_TRUE(cluster.connections[2].empty());
  EXPECT_EQ(cluster.connections[0].size(), 1u);
  EXPECT_EQ(std::string(cluster.connections[0][0]->transportName()), "ofi");
  EXPECT_GE(cluster.connections[0][0]->bufferBytes(), size_t{1} << 20);
}

// libfabric 1.17's shm provider names a region after the process: "<pid>:<uid>:<n>" in
// /dev/shm, n counting the process's endpoints. A file of that name left by an earlier process
// with the same pid (one killed before it closed its endpoints; pids wrap at pid_max) made
// fi_enable fail with EBUSY (CI, stop 27). trnccl names each region itself, unique to the process
// that opens it, so no leftover can be in the way.
TEST(OfiShmRegion, LeftoversOfAnEarlierProcessWithOurPidDoNotStopEnable) {
  EnvGuard provider("TRNCCL_OFI_PROVIDER", "shm");
  Result<std::shared_ptr<const fi_info>> list = providerList();
  if (!list) GTEST_SKIP() << list.status().message();
  std::vector<std::string> leftovers;
  for (int n = 0; n < 256; ++n) {
    std::string name = fmt::format("/{}:{}:{}", ::getpid(), ::getuid(), n);
    int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) continue;
    leftovers.push_back(name);
    bool sized = ::ftruncate(fd, 4096) == 0;  // zeros: not a region of this libfabric's version
    ::close(fd);
    ASSERT_TRUE(sized);
  }
  ASSERT_FALSE(leftovers.empty());
  Cluster cluster(3);
  Status connected = cluster.connect([](int r) { return ringPeers(r, 3); });
  for (const std::string& name : leftovers) ::shm_unlink(name.c_str());
  ASSERT_TRUE(connected.isOk()) << connected.message();
  Status status = exchangeEach(cluster, {1, 4096 + 3});
  EXPECT_TRUE(status.isOk()) << status.message();
}

INSTANTIATE_TEST_SUITE_P(Providers, OfiTransportTest, ::testing::Values("tcp", "net", "shm"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trnccl::transport::ofi::test
