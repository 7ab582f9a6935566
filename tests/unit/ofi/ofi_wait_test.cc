// How a receiver that found nothing waits (transports/core/waiting.h, transports/ofi/waker.h):
// in poll(2) on the completion queue's descriptor when it waits on ofi connections alone, on
// the doorbell (rung by the armed waker thread) when it also waits on a connection without
// descriptors, as an executor waiting on shm too does. Either way a message arriving must wake
// it: each wait here is bounded by 10 s, so a lost wake-up shows as a receive taking that long.
#include <gtest/gtest.h>

#include <thread>

#include "transports/ofi/ofi_connection.h"
#include "unit/ofi/ofi_test_util.h"

namespace trnccl::transport::ofi::test {
namespace {

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

using OfiWaitTest = PerProvider;

// Rank 0 sends `out` after `delay`; rank 1, already waiting (with `alsoWaitOn` in its wait set
// when not null), receives it. The time rank 1 took, or an error.
Result<Clock::duration> lateMessage(Cluster& cluster, const std::vector<std::byte>& out,
                                    uint64_t tag, std::chrono::milliseconds delay,
                                    Connection* alsoWaitOn) {
  std::vector<std::byte> in(out.size());
  Connection* receiver = cluster.connTo(1, 0);
  TRN_TRY(receiver->beginRecv(tag, in.size()));
  Status sent;
  std::thread late([&] {
    std::this_thread::sleep_for(delay);
    Connection* sender = cluster.connTo(0, 1);
    sent = sender->beginSend(tag, out.size());
    std::vector<SendOp> sends = {{sender, out.data(), out.size()}};
    std::vector<RecvOp> none;
    if (sent) sent = drive(cluster.bell(0), sends, none);
  });
  std::vector<SendOp> none;
  std::vector<RecvOp> recvs = {{receiver, in.data(), in.size()}};
  // A 0-byte receive is never polled, but its connection joins the wait set.
  if (alsoWaitOn != nullptr) recvs.push_back({alsoWaitOn, nullptr, 0});
  auto start = Clock::now();
  Status got = drive(cluster.bell(1), none, recvs, Deadline::after(std::chrono::seconds(60)),
                     std::chrono::seconds(10));
  auto took = Clock::now() - start;
  late.join();
  TRN_TRY(sent);
  TRN_TRY(got);
  if (in != out) return internalError("test: message {:#x} arrived corrupted", tag);
  return took;
}

TEST_P(OfiWaitTest, SleepingReceiverWakesOnArrival) {
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
  if (!static_cast<OfiConnection*>(cluster.connTo(1, 0))->endpoint().hasWaker()) {
    GTEST_SKIP() << "no wait descriptor: the receiver polls";
  }
  NoDescriptors shmLike;
  std::vector<std::byte> out(1000);
  fillPattern(out, 11);
  // The first message also sets up the provider's own connection (rxm connects on first use).
  Result<Clock::duration> warm =
      lateMessage(cluster, out, 1, std::chrono::milliseconds(0), nullptr);
  ASSERT_TRUE(warm.isOk()) << warm.status().message();
  uint64_t tag = 2;
  for (Connection* also : {static_cast<Connection*>(nullptr), static_cast<Connection*>(&shmLike)}) {
    for (int round = 0; round < 2; ++round) {
      SCOPED_TRACE(::testing::Message()
                   << (also ? "on the doorbell" : "in poll(2)") << " round " << round);
      Result<Clock::duration> took =
          lateMessage(cluster, out, tag++, std::chrono::milliseconds(300), also);
      ASSERT_TRUE(took.isOk()) << took.status().message();
      EXPECT_LT(*took, std::chrono::seconds(8));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Providers, OfiWaitTest, ::testing::Values("tcp", "shm"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trnccl::transport::ofi::test
