// Zero-copy sends through the registration cache, between two ranks as threads, once per
// provider. TRNCCL_OFI_MR_LOCAL=1 makes tcp and shm behave like efa (FI_MR_LOCAL): device
// memory and host memory registered with the communicator must go zero-copy with a cached
// registration, other host memory through the ring. Only rank 0 sends, so the per-process
// counters count its endpoint's choices.
#include <gtest/gtest.h>

#include "transports/ofi/ofi_connection.h"
#include "transports/ofi/testing.h"
#include "transports/ofi/wire.h"
#include "unit/ofi/mr_test_util.h"
#include "unit/ofi/ofi_test_util.h"

namespace trnccl::transport::ofi::test {
namespace {

using testing::Event;

constexpr size_t kWindow = MrCache::kWindowBytes;
constexpr size_t kPieceBytes = 65536;
constexpr size_t kMessage = 4 * kPieceBytes;  // four pieces, each above the zero-copy bound

class OfiZeroCopyTest : public PerProvider {
 protected:
  // A connected pair under the environment of the tests, with `registered` as both ranks'
  // registered buffers (trncclCommRegister's table; null: none).
  std::unique_ptr<Cluster> connect(const RegisteredMemory* registered = nullptr) {
    auto cluster = std::make_unique<Cluster>(2);
    for (auto& rank : cluster->ranks) rank->ctx.registered = registered;
    Status status = cluster->connect([](int r) { return std::vector<int>{1 - r}; });
    EXPECT_TRUE(status.isOk()) << status.message();
    if (!status) return nullptr;
    return cluster;
  }

  // Rank 0 sends `bytes` from `src` to rank 1; true when they arrived intact.
  static bool transfer(Cluster& cluster, const std::byte* src, size_t bytes, uint64_t tag) {
    std::vector<std::byte> in(bytes);
    Status status = cluster.runEach([&](int r) -> Status {
      Connection* c = cluster.connTo(r, 1 - r);
      std::vector<SendOp> sends;
      std::vector<RecvOp> recvs;
      if (r == 0) {
        TRN_TRY(c->beginSend(tag, bytes));
        sends.push_back({c, src, bytes});
      } else {
        TRN_TRY(c->beginRecv(tag, bytes));
        recvs.push_back({c, in.data(), bytes});
      }
      return drive(cluster.bell(r), sends, recvs);
    });
    EXPECT_TRUE(status.isOk()) << status.message();
    return status.isOk() && std::memcmp(in.data(), src, bytes) == 0;
  }

  // Rank 0 sends a host buffer of kMessage bytes to rank 1 of a fresh pair; true when it
  // arrived intact.
  bool sendHostBuffer(uint64_t seed) {
    std::vector<std::byte> host(kMessage);
    fillPattern(host, seed);
    auto cluster = connect();
    return cluster && transfer(*cluster, host.data(), kMessage, seed);
  }

  // Fills `bytes` at `dst` (device or host memory) with a pattern of `seed`.
  static void fill(std::byte* dst, size_t bytes, uint64_t seed) {
    std::vector<std::byte> pattern(bytes);
    fillPattern(pattern, seed);
    std::memcpy(dst, pattern.data(), bytes);
  }

  EnvGuard mrLocal_{"TRNCCL_OFI_MR_LOCAL", "1"};
  EnvGuard zcopy_{"TRNCCL_OFI_ZCOPY_BYTES", "4096"};
  EnvGuard piece_{"TRNCCL_OFI_PIECE_BYTES", std::to_string(kPieceBytes)};
};

// The first message registers its window once; the same buffer again, and a neighbouring
// buffer of the same window, register nothing and hit the cache on every piece.
TEST_P(OfiZeroCopyTest, DeviceBufferGoesZeroCopyWithACachedRegistration) {
  DeviceWindows device(1);
  ASSERT_TRUE(device.ok());
  std::byte* buffer = device.window(0);
  std::byte* neighbour = device.window(0) + kWindow / 2;
  fill(buffer, kMessage, 1);
  fill(neighbour, kMessage, 2);
  auto cluster = connect();
  ASSERT_TRUE(cluster);

  CounterDelta<Event> first;
  ASSERT_TRUE(transfer(*cluster, buffer, kMessage, 1));
  EXPECT_EQ(first.get(Event::kRegistrations), 1);
  EXPECT_EQ(first.get(Event::kCacheHits), 3);
  EXPECT_EQ(first.get(Event::kZeroCopyPieces), 4);
  EXPECT_EQ(first.get(Event::kCopiedPieces), 0);
  // The header leads the first in-place piece as its first part (fi_tsendv) where the
  // provider gathers (every provider here), else it goes alone, ahead of them.
  const bool gathers = static_cast<OfiConnection*>(cluster->connTo(0, 1))->endpoint().gathers();
  EXPECT_EQ(first.get(Event::kLeadingHeaders), gathers ? 1 : 0);

  for (const std::byte* source : {buffer, neighbour}) {
    CounterDelta<Event> again;
    ASSERT_TRUE(transfer(*cluster, source, kMessage, 2));
    EXPECT_EQ(again.get(Event::kRegistrations), 0);
    EXPECT_EQ(again.get(Event::kCacheHits), 4);
    EXPECT_EQ(again.get(Event::kZeroCopyPieces), 4);
    EXPECT_EQ(again.get(Event::kCopiedPieces), 0);
  }
}

// Host memory may be unmapped behind the cache's back: never registered, always copied.
TEST_P(OfiZeroCopyTest, HostBufferGoesThroughTheRing) {
  CounterDelta<Event> delta;
  ASSERT_TRUE(sendHostBuffer(3));
  EXPECT_EQ(delta.get(Event::kZeroCopyPieces), 0);
  EXPECT_EQ(delta.get(Event::kCopiedPieces), 4);
  EXPECT_EQ(delta.get(Event::kRegistrations), 0);
  EXPECT_EQ(delta.get(Event::kCacheHits), 0);
}

// Without (pretended) local registration the same host buffer goes zero-copy, unregistered.
TEST_P(OfiZeroCopyTest, HostBufferGoesZeroCopyWithoutMrLocal) {
  EnvGuard off("TRNCCL_OFI_MR_LOCAL", "0");
  Result<InfoPtr> info = chooseProvider(true);
  ASSERT_TRUE(info.isOk()) << info.status().message();
  if ((*info)->domain_attr->mr_mode & FI_MR_LOCAL) GTEST_SKIP() << "provider needs FI_MR_LOCAL";
  CounterDelta<Event> delta;
  ASSERT_TRUE(sendHostBuffer(4));
  EXPECT_EQ(delta.get(Event::kZeroCopyPieces), 4);
  EXPECT_EQ(delta.get(Event::kCopiedPieces), 0);
  EXPECT_EQ(delta.get(Event::kRegistrations), 0);
}

// One message from each of more windows than the cache holds: it stays at its bound by
// evicting the least recently used, and closes every registration with the endpoint.
TEST_P(OfiZeroCopyTest, ManyWindowsStayWithinTheBound) {
  constexpr size_t kExtra = 16;
  constexpr size_t kWindows = MrCache::kMaxEntries + kExtra;
  DeviceWindows device(kWindows);
  ASSERT_TRUE(device.ok());
  CounterDelta<Event> delta;
  {
    auto cluster = connect();
    ASSERT_TRUE(cluster);
    // One piece, too large to go inline.
    const size_t kBytes = std::min(inlineBytesOf(*cluster) + 4096, kPieceBytes);
    for (size_t i = 0; i < kWindows; ++i) fill(device.window(i), kBytes, 100 + i);
    for (size_t i = 0; i < kWindows; ++i) {
      ASSERT_TRUE(transfer(*cluster, device.window(i), kBytes, i)) << "window " << i;
    }
    EXPECT_EQ(delta.get(Event::kRegistrations), static_cast<int64_t>(kWindows));
    EXPECT_EQ(delta.get(Event::kEvictions), static_cast<int64_t>(kExtra));
    EXPECT_EQ(delta.get(Event::kLiveRegistrations), static_cast<int64_t>(MrCache::kMaxEntries));
    EXPECT_EQ(delta.get(Event::kZeroCopyPieces), static_cast<int64_t>(kWindows));
    EXPECT_EQ(delta.get(Event::kCacheHits), 0);
    // The newest window is still cached; the oldest was evicted and registers again.
    ASSERT_TRUE(transfer(*cluster, device.window(kWindows - 1), kBytes, kWindows));
    EXPECT_EQ(delta.get(Event::kCacheHits), 1);
    ASSERT_TRUE(transfer(*cluster, device.window(0), kBytes, kWindows + 1));
    EXPECT_EQ(delta.get(Event::kRegistrations), static_cast<int64_t>(kWindows + 1));
    EXPECT_EQ(delta.get(Event::kLiveRegistrations), static_cast<int64_t>(MrCache::kMaxEntries));
  }
  EXPECT_EQ(delta.get(Event::kLiveRegistrations), 0);
}

// A host buffer registered with the communicator goes in place whatever the zero-copy bound
// (off here) and the piece size, registered with the domain once: its first message registers
// the whole range, later ones (a small one at an offset too) hit it. Unregistered host bytes
// still go through the ring; after deregistration the buffer does too, and the next send
// closes its registration.
TEST_P(OfiZeroCopyTest, RegisteredHostBufferGoesInPlaceRegisteredOnce) {
  EnvGuard zcopyOff("TRNCCL_OFI_ZCOPY_BYTES", "0");
  std::vector<std::byte> host(kMessage), other(kMessage);
  fillPattern(host, 5);
  fillPattern(other, 6);
  RegisteredMemory registered;
  const uint64_t id = registered.add(host.data(), host.size());
  auto cluster = connect(&registered);
  ASSERT_TRUE(cluster);

  CounterDelta<Event> first;
  ASSERT_TRUE(transfer(*cluster, host.data(), kMessage, 1));
  EXPECT_EQ(first.get(Event::kRegisteredPieces), 4);
  EXPECT_EQ(first.get(Event::kZeroCopyPieces), 4);
  EXPECT_EQ(first.get(Event::kCopiedPieces), 0);
  EXPECT_EQ(first.get(Event::kRegistrations), 1);
  EXPECT_EQ(first.get(Event::kCacheHits), 3);

  // The smallest message that does not travel inline (wire.h), at an offset.
  CounterDelta<Event> small;
  ASSERT_TRUE(transfer(*cluster, host.data() + 100, inlineBytesOf(*cluster) + 1, 2));
  EXPECT_EQ(small.get(Event::kRegisteredPieces), 1);
  EXPECT_EQ(small.get(Event::kCopiedPieces), 0);
  EXPECT_EQ(small.get(Event::kRegistrations), 0);
  EXPECT_EQ(small.get(Event::kCacheHits), 1);

  CounterDelta<Event> unregistered;
  ASSERT_TRUE(transfer(*cluster, other.data(), kMessage, 3));
  EXPECT_EQ(unregistered.get(Event::kCopiedPieces), 4);
  EXPECT_EQ(unregistered.get(Event::kRegisteredPieces), 0);
  EXPECT_EQ(unregistered.get(Event::kZeroCopyPieces), 0);

  ASSERT_TRUE(registered.remove(id));
  CounterDelta<Event> after;
  ASSERT_TRUE(transfer(*cluster, host.data(), kMessage, 4));
  EXPECT_EQ(after.get(Event::kCopiedPieces), 4);
  EXPECT_EQ(after.get(Event::kRegisteredPieces), 0);
  EXPECT_EQ(after.get(Event::kEvictions), 1);
  EXPECT_EQ(after.get(Event::kLiveRegistrations), -1);
}

// Without (pretended) local registration a registered host buffer goes in place unregistered
// (but for a message small enough to travel inside its header).
TEST_P(OfiZeroCopyTest, RegisteredHostBufferGoesInPlaceWithoutMrLocal) {
  EnvGuard off("TRNCCL_OFI_MR_LOCAL", "0");
  EnvGuard zcopyOff("TRNCCL_OFI_ZCOPY_BYTES", "0");
  Result<InfoPtr> info = chooseProvider(true);
  ASSERT_TRUE(info.isOk()) << info.status().message();
  if ((*info)->domain_attr->mr_mode & FI_MR_LOCAL) GTEST_SKIP() << "provider needs FI_MR_LOCAL";
  std::vector<std::byte> host(kMessage);
  fillPattern(host, 7);
  RegisteredMemory registered;
  registered.add(host.data(), host.size());
  auto cluster = connect(&registered);
  ASSERT_TRUE(cluster);
  CounterDelta<Event> delta;
  ASSERT_TRUE(transfer(*cluster, host.data(), kMessage, 1));
  ASSERT_TRUE(transfer(*cluster, host.data() + 8, inlineBytesOf(*cluster) + 8, 2));
  // A message inline (inside its header) is copied into the header, registered or not.
  ASSERT_TRUE(transfer(*cluster, host.data() + 8, inlineBytesOf(*cluster), 3));
  EXPECT_EQ(delta.get(Event::kInlineMessages), 1);
  EXPECT_EQ(delta.get(Event::kRegisteredPieces), 5);
  EXPECT_EQ(delta.get(Event::kCopiedPieces), 0);
  EXPECT_EQ(delta.get(Event::kRegistrations), 0);
}

INSTANTIATE_TEST_SUITE_P(Providers, OfiZeroCopyTest, ::testing::Values("tcp", "net", "shm"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trnccl::transport::ofi::test
