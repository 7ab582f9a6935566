// How an executor waits on ofi connections (transports/ofi/waker.h): it drives the provider
// itself while it polls, and sleeps on the doorbell, which the waker thread rings when the
// completion queue's descriptor turns readable: once when nothing large is in flight, at every
// arrival while a large message is. The waker watches only while somebody sleeps. Waits here
// are bounded by 10 s, so a lost wake-up shows as a transfer taking that long.
#include <gtest/gtest.h>

#include <thread>

#include "transports/ofi/ofi_connection.h"
#include "transports/ofi/testing.h"
#include "unit/ofi/ofi_test_util.h"

namespace trnccl::transport::ofi::test {
namespace {

using testing::Event;

constexpr auto kLongSleep = std::chrono::seconds(10);  // a lost wake-up costs this
constexpr auto kLostWakeUp = std::chrono::seconds(8);  // a transfer this slow lost one

int64_t count(Event event) { return testing::counters().get(event); }

class OfiWaitTest : public PerProvider {
 protected:
  // A connected pair whose endpoints have a wait descriptor; false: skip.
  bool connectPair() {
    cluster_.emplace(2);  // after SetUp() chose the provider
    if (!cluster_->connect([](int r) { return std::vector<int>{1 - r}; })) return false;
    return static_cast<OfiConnection*>(cluster_->connTo(1, 0))->endpoint().hasWaker();
  }

  // Rank 0 sends one message of `bytes` after `gap`; rank 1, already waiting, receives it.
  // How long rank 1 took.
  Result<Clock::duration> lateMessage(size_t bytes, std::chrono::milliseconds gap) {
    std::vector<std::byte> out(bytes);
    std::vector<std::byte> in(bytes);
    fillPattern(out, tag_);
    Connection* receiver = cluster_->connTo(1, 0);
    TRN_TRY(receiver->beginRecv(tag_, bytes));
    Status sent;
    std::thread sender([&] {
      std::this_thread::sleep_for(gap);
      Connection* c = cluster_->connTo(0, 1);
      sent = c->beginSend(tag_, bytes);
      std::vector<SendOp> sends = {{c, out.data(), bytes}};
      std::vector<RecvOp> none;
      if (sent) sent = drive(cluster_->bell(0), sends, none, Deadline::after(60s), kLongSleep);
    });
    std::vector<SendOp> none;
    std::vector<RecvOp> recvs = {{receiver, in.data(), bytes}};
    const auto start = Clock::now();
    Status got = drive(cluster_->bell(1), none, recvs, Deadline::after(60s), kLongSleep);
    const auto took = Clock::now() - start;
    sender.join();
    TRN_TRY(sent);
    TRN_TRY(got);
    if (in != out) return internalError("test: message {:#x} arrived corrupted", tag_);
    ++tag_;
    return took;
  }

  std::optional<Cluster> cluster_;
  uint64_t tag_ = 1;
};

// Messages arriving while nobody sleeps wake no thread: rank 0 sends without ever blocking,
// rank 1 does not wait at all until they are in, and the waker thread never rings.
TEST_P(OfiWaitTest, ArrivalsWhileNobodySleepsWakeNoThread) {
  if (!connectPair()) GTEST_SKIP() << "no wait descriptor: the waiter polls";
  // The first message also sets up the provider's own connection (rxm connects on first use).
  ASSERT_TRUE(lateMessage(1000, 0ms).isOk());
  constexpr int kMessages = 12;  // within the receiver's 16 header slots
  constexpr size_t kBytes = 1000;
  std::vector<std::vector<std::byte>> out(kMessages, std::vector<std::byte>(kBytes));
  const int64_t rings = count(Event::kWakerRings);
  Connection* sender = cluster_->connTo(0, 1);
  for (int i = 0; i < kMessages; ++i) {
    fillPattern(out[i], tag_ + i);
    ASSERT_TRUE(sender->beginSend(tag_ + i, kBytes).isOk());
    Result<size_t> taken = offer(*sender, out[i].data(), kBytes);
    ASSERT_TRUE(taken.isOk() && *taken == kBytes);
    Deadline deadline = Deadline::after(10s);
    Result<bool> done = false;
    while ((done = sender->sendDone()).isOk() && !*done && !deadline.expired()) {
      std::this_thread::yield();  // polling, never asleep: nothing arms the waker
    }
    ASSERT_TRUE(done.isOk() && *done) << "send " << i << " did not complete";
  }
  std::this_thread::sleep_for(50ms);  // the arrivals sit in rank 1's queue
  // A rank whose executor slept in lateMessage and was woken by something else than its waker
  // (the doorbell's bounded sleep, another ring) leaves a kOnce watch behind, which rings once at
  // its next arrival: at most one such ring per rank. A waker that rang at every arrival would
  // ring 12 times or more here.
  EXPECT_LE(count(Event::kWakerRings) - rings, 2);
  Connection* receiver = cluster_->connTo(1, 0);
  for (int i = 0; i < kMessages; ++i) {
    std::vector<std::byte> in(kBytes);
    ASSERT_TRUE(receiver->beginRecv(tag_ + i, kBytes).isOk());
    std::vector<SendOp> none;
    std::vector<RecvOp> recvs = {{receiver, in.data(), kBytes}};
    ASSERT_TRUE(drive(cluster_->bell(1), none, recvs).isOk());
    EXPECT_EQ(in, out[i]) << "message " << i;
  }
}

// A receiver that sleeps before its message comes is rung by the waker, armed once.
TEST_P(OfiWaitTest, SleepingReceiverIsRungByTheWaker) {
  if (!connectPair()) GTEST_SKIP() << "no wait descriptor: the waiter polls";
  ASSERT_TRUE(lateMessage(1000, 0ms).isOk());
  const int64_t rings = count(Event::kWakerRings);
  const int64_t sleeps = count(Event::kDoorbellWaits);
  for (int round = 0; round < 2; ++round) {
    Result<Clock::duration> took = lateMessage(1000, 300ms);
    ASSERT_TRUE(took.isOk()) << took.status().message();
    EXPECT_LT(*took, kLostWakeUp);
  }
  EXPECT_GT(count(Event::kDoorbellWaits), sleeps);
  EXPECT_GT(count(Event::kWakerRings), rings);
  // Each rank sleeps about once per round. A descriptor left readable after the first
  // completion (a provider whose fi_trywait clears nothing: net, endpoint.cc) had the executor
  // and the waker take turns at full speed: 27,769 sleeps and rings here.
  EXPECT_LE(count(Event::kDoorbellWaits) - sleeps, 10);
  EXPECT_LE(count(Event::kWakerRings) - rings, 10);
}

// Large messages both ways at once, both ranks waiting with long bounds: every sleep during
// the transfer has the waker ring at every arrival, the pieces keep moving, nothing is lost.
TEST_P(OfiWaitTest, LargeTransfersCompleteWhileBothRanksWait) {
  if (!connectPair()) GTEST_SKIP() << "no wait descriptor: the waiter polls";
  constexpr size_t kBytes = 24u << 20;  // 24 pieces each way, six times the bounce ring
  std::vector<std::byte> out[2], in[2];
  for (int r = 0; r < 2; ++r) {
    out[r].resize(kBytes);
    in[r].resize(kBytes);
    fillPattern(out[r], 100 + r);
  }
  const int64_t once = count(Event::kDoorbellWaits);
  const auto start = Clock::now();
  Status status = cluster_->runEach([&](int r) -> Status {
    Connection* c = cluster_->connTo(r, 1 - r);
    TRN_TRY(c->beginSend(7, kBytes));
    TRN_TRY(c->beginRecv(7, kBytes));
    std::vector<SendOp> sends = {{c, out[r].data(), kBytes}};
    std::vector<RecvOp> recvs = {{c, in[r].data(), kBytes}};
    return drive(cluster_->bell(r), sends, recvs, Deadline::after(60s), kLongSleep);
  });
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_LT(Clock::now() - start, kLostWakeUp);
  EXPECT_EQ(in[0], out[1]);
  EXPECT_EQ(in[1], out[0]);
  EXPECT_EQ(count(Event::kDoorbellWaits), once) << "a sleep with pieces in flight armed once";
}

// How the waker watches follows what is in flight on the endpoint: once with nothing large,
// at every arrival (bulk) while a message that streams is received. Over the native tcp
// provider a single piece up to kNativeStreamBytes does not stream (provider.h streamBytes);
// over rxm every message above the inline bound does, and so does any with
// TRNCCL_OFI_STREAM_BYTES=0.
TEST_P(OfiWaitTest, WatchFollowsWhatIsInFlight) {
  for (const char* env : {"", "0"}) {
    std::optional<EnvGuard> stream;
    if (*env != '\0') stream.emplace("TRNCCL_OFI_STREAM_BYTES", env);
    if (!connectPair()) GTEST_SKIP() << "no wait descriptor: the waiter polls";
    auto* receiver = static_cast<OfiConnection*>(cluster_->connTo(1, 0));
    const bool native = nativeTcp(receiver->endpoint().info());
    const bool pieceStreams = *env != '\0' || !native;
    int64_t once = count(Event::kDoorbellWaits);
    int64_t bulk = count(Event::kBulkDoorbellWaits);
    receiver->armDoorbell();
    EXPECT_EQ(count(Event::kDoorbellWaits), once + 1);
    ASSERT_TRUE(receiver->beginRecv(1, kNativeStreamBytes).isOk());  // one piece
    receiver->armDoorbell();
    EXPECT_EQ(count(Event::kBulkDoorbellWaits), bulk + (pieceStreams ? 1 : 0));
    EXPECT_EQ(count(Event::kDoorbellWaits), once + (pieceStreams ? 1 : 2));

    cluster_.reset();  // a fresh pair: the receive above never completes
    if (!connectPair()) GTEST_SKIP() << "no wait descriptor: the waiter polls";
    receiver = static_cast<OfiConnection*>(cluster_->connTo(1, 0));
    once = count(Event::kDoorbellWaits);
    bulk = count(Event::kBulkDoorbellWaits);
    ASSERT_TRUE(receiver->beginRecv(1, 1u << 20).isOk());
    receiver->armDoorbell();
    EXPECT_EQ(count(Event::kBulkDoorbellWaits), bulk + 1) << "a large receive in flight";
    EXPECT_EQ(count(Event::kDoorbellWaits), once);
    cluster_.reset();
  }
}

INSTANTIATE_TEST_SUITE_P(Providers, OfiWaitTest, ::testing::Values("tcp", "net"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trnccl::transport::ofi::test
