// How an executor waits on ofi connections (transports/ofi/waker.h): with nothing large in
// flight, in poll(2) on the completion queue's descriptor itself, so the waker thread never
// wakes; with a large message in flight, or when it also waits on a connection without
// descriptors (as on shm), on the doorbell, rung by the waker. Either way an arrival must wake
// it: the waits here are bounded by 10 s, so a lost wake-up shows as a transfer taking that
// long.
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

// A connection with no descriptors to wait on (the default wakeFds()): waiting on it sends
// the waiter to the doorbell.
class NoDescriptors final : public Connection {
 public:
  Status beginSend(uint64_t, size_t) override { return Status::ok(); }
  Result<size_t> sendSome(const void*, size_t) override { return size_t{0}; }
  Result<bool> sendDone() override { return true; }
  Status beginRecv(uint64_t, size_t) override { return Status::ok(); }
  Result<size_t> recvSome(size_t, const Consumer&) override { return size_t{0}; }
  int peer() const override { return 0; }
  const char* transportName() const override { return "none"; }
};

class OfiWaitTest : public PerProvider {
 protected:
  // A connected pair whose endpoints have a wait descriptor; false: skip.
  bool connectPair() {
    cluster_.emplace(2);  // after SetUp() chose the provider
    if (!cluster_->connect([](int r) { return std::vector<int>{1 - r}; })) return false;
    return static_cast<OfiConnection*>(cluster_->connTo(1, 0))->endpoint().hasWaker();
  }

  // Rank 0 sends `count` messages of `bytes` to rank 1, `gap` apart; rank 1, already waiting
  // (with `alsoWaitOn` in its wait set when not null), receives each. The longest receive.
  Result<Clock::duration> messages(int count, size_t bytes, std::chrono::microseconds gap,
                                   Connection* alsoWaitOn = nullptr) {
    std::vector<std::byte> out(bytes);
    std::vector<std::byte> in(bytes);
    Clock::duration longest{};
    for (int i = 0; i < count; ++i) {
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
      // A 0-byte receive is never polled, but its connection joins the wait set.
      if (alsoWaitOn != nullptr) recvs.push_back({alsoWaitOn, nullptr, 0});
      const auto start = Clock::now();
      Status got = drive(cluster_->bell(1), none, recvs, Deadline::after(60s), kLongSleep);
      longest = std::max(longest, Clock::now() - start);
      sender.join();
      TRN_TRY(sent);
      TRN_TRY(got);
      if (in != out) return internalError("test: message {:#x} arrived corrupted", tag_);
      ++tag_;
    }
    return longest;
  }

  std::optional<Cluster> cluster_;
  uint64_t tag_ = 1;
};

// Small messages, each arriving after its receiver blocked: every wait is on the queue's
// descriptor, and the waker thread never rings (one thread wake-up per message, not two).
TEST_P(OfiWaitTest, SmallMessagesWakeTheWaiterWithoutTheWakerThread) {
  if (!connectPair()) GTEST_SKIP() << "no wait descriptor: the waiter polls";
  // The first message also sets up the provider's own connection (rxm connects on first use).
  ASSERT_TRUE(messages(1, 1000, 0us).isOk());
  auto& counters = testing::counters();
  const int64_t rings = counters.get(Event::kWakerRings);
  const int64_t onDescriptor = counters.get(Event::kDescriptorWaits);
  const int64_t onDoorbell = counters.get(Event::kDoorbellWaits);
  Result<Clock::duration> longest = messages(40, 1000, 2ms);
  ASSERT_TRUE(longest.isOk()) << longest.status().message();
  EXPECT_LT(*longest, kLostWakeUp);
  EXPECT_GT(counters.get(Event::kDescriptorWaits), onDescriptor);
  EXPECT_EQ(counters.get(Event::kDoorbellWaits), onDoorbell);
  EXPECT_EQ(counters.get(Event::kWakerRings), rings);
}

// Waiting on shm too, the waiter sleeps on the doorbell and the waker, armed once, rings it.
TEST_P(OfiWaitTest, WaiterOnTheDoorbellIsRungByTheWaker) {
  if (!connectPair()) GTEST_SKIP() << "no wait descriptor: the waiter polls";
  ASSERT_TRUE(messages(1, 1000, 0us).isOk());
  NoDescriptors shmLike;
  const int64_t rings = testing::counters().get(Event::kWakerRings);
  Result<Clock::duration> longest = messages(2, 1000, 300ms, &shmLike);
  ASSERT_TRUE(longest.isOk()) << longest.status().message();
  EXPECT_LT(*longest, kLostWakeUp);
  EXPECT_GT(testing::counters().get(Event::kWakerRings), rings);
}

// Large messages both ways at once, both ranks waiting with long bounds: the pieces keep
// moving (the waits are on the doorbell, rung at every arrival), and nothing is lost.
TEST_P(OfiWaitTest, LargeTransfersCompleteWhileBothRanksWait) {
  if (!connectPair()) GTEST_SKIP() << "no wait descriptor: the waiter polls";
  constexpr size_t kBytes = 24u << 20;  // 24 pieces each way, six times the bounce ring
  std::vector<std::byte> out[2], in[2];
  for (int r = 0; r < 2; ++r) {
    out[r].resize(kBytes);
    in[r].resize(kBytes);
    fillPattern(out[r], 100 + r);
  }
  auto& counters = testing::counters();
  const int64_t onDescriptor = counters.get(Event::kDescriptorWaits);
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
  // Never in poll(2) on the descriptor while pieces were in flight.
  EXPECT_EQ(counters.get(Event::kDescriptorWaits), onDescriptor);
}

// Which wait a connection offers follows what is in flight on its endpoint.
TEST_P(OfiWaitTest, DescriptorOnlyWithoutLargeMessagesInFlight) {
  if (!connectPair()) GTEST_SKIP() << "no wait descriptor: the waiter polls";
  Connection* receiver = cluster_->connTo(1, 0);
  std::vector<int> fds;
  receiver->wakeFds(fds);
  EXPECT_EQ(fds.size(), 2u);  // the queue's descriptor and the kick fd
  ASSERT_TRUE(receiver->beginRecv(1, 1u << 20).isOk());
  fds.clear();
  receiver->wakeFds(fds);
  EXPECT_TRUE(fds.empty()) << "a large receive in flight waits on the doorbell";
}

INSTANTIATE_TEST_SUITE_P(Providers, OfiWaitTest, ::testing::Values("tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trnccl::transport::ofi::test
