// MrCache on a real domain of each provider (tcp, shm): which memory it registers, how windows
// are shared, and that it evicts only the least recently used entry no send still uses.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "device/device_api.h"
#include "transports/ofi/testing.h"
#include "unit/ofi/mr_test_util.h"
#include "unit/ofi/ofi_test_util.h"

namespace trnccl::transport::ofi::test {
namespace {

using testing::Event;

constexpr size_t kWindow = MrCache::kWindowBytes;
constexpr size_t kMax = MrCache::kMaxEntries;

class MrCacheTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    provider_.emplace("TRNCCL_OFI_PROVIDER", GetParam());
    Result<InfoPtr> info = chooseProvider(true);
    if (!info) GTEST_SKIP() << info.status().message();
    fid_fabric* fabric = nullptr;
    ASSERT_EQ(fi_fabric((*info)->fabric_attr, &fabric, nullptr), 0);
    fabric_.reset(fabric);
    fid_domain* domain = nullptr;
    ASSERT_EQ(fi_domain(fabric_.get(), info->get(), &domain, nullptr), 0);
    domain_.reset(domain);
    cache_.emplace(domain_.get(), [](const void* p) { return device::locate(p); });
  }
  void TearDown() override { cache_.reset(); }  // before the domain closes

  // A lookup that must succeed (pinned or empty).
  MrCache::Lease lookup(const void* buf, size_t len) {
    Result<MrCache::Lease> lease = cache_->descriptor(buf, len);
    EXPECT_TRUE(lease.isOk()) << lease.status().message();
    return lease ? *lease : MrCache::Lease{};
  }

  std::optional<EnvGuard> provider_;
  FabricPtr fabric_{nullptr, {"fabric"}};
  DomainPtr domain_{nullptr, {"domain"}};
  std::optional<MrCache> cache_;
};

TEST_P(MrCacheTest, NeighboursShareOneWindow) {
  DeviceWindows device(3);
  ASSERT_TRUE(device.ok());
  CounterDelta<Event> delta;
  MrCache::Lease first = lookup(device.window(0), 4096);
  ASSERT_TRUE(first);
  EXPECT_EQ(delta.get(Event::kRegistrations), 1);
  // Another buffer of the same window, and the same buffer again: no new registration.
  MrCache::Lease neighbour = lookup(device.window(0) + kWindow / 2, 65536);
  MrCache::Lease again = lookup(device.window(0), 4096);
  EXPECT_EQ(neighbour.entry, first.entry);
  EXPECT_EQ(again.entry, first.entry);
  EXPECT_EQ(delta.get(Event::kRegistrations), 1);
  EXPECT_EQ(delta.get(Event::kCacheHits), 2);
  // The next window is another registration; bytes straddling both need one covering both,
  // which then serves any lookup inside it.
  MrCache::Lease next = lookup(device.window(1), 4096);
  MrCache::Lease straddling = lookup(device.window(1) - 4096, 8192);
  EXPECT_NE(next.entry, first.entry);
  EXPECT_NE(straddling.entry, first.entry);
  EXPECT_NE(straddling.entry, next.entry);
  EXPECT_EQ(delta.get(Event::kRegistrations), 3);
  EXPECT_EQ(lookup(device.window(1) - 4096, 8192).entry, straddling.entry);
  EXPECT_EQ(cache_->size(), 3u);
  EXPECT_EQ(delta.get(Event::kLiveRegistrations), 3);
  for (MrCache::Lease lease : {first, neighbour, again, next, straddling, straddling}) {
    cache_->release(lease.entry);
  }
  cache_.reset();
  EXPECT_EQ(delta.get(Event::kLiveRegistrations), 0);  // every registration closed with the cache
}

TEST_P(MrCacheTest, HostMemoryIsNeverRegistered) {
  std::vector<std::byte> host(1 << 20);
  DeviceWindows device(1);
  ASSERT_TRUE(device.ok());
  std::optional<MemoryLocation> where = device::locate(device.window(0));
  ASSERT_TRUE(where.has_value());
  const std::byte* arenaEnd = device.window(0) - where->offset + where->arenaBytes;
  CounterDelta<Event> delta;
  EXPECT_FALSE(lookup(host.data(), host.size()));
  EXPECT_FALSE(lookup(arenaEnd - 4096, 8192));  // runs past the arena
  EXPECT_EQ(cache_->size(), 0u);
  EXPECT_EQ(delta.get(Event::kRegistrations), 0);
}

// Released entries: a miss on a full cache closes the least recently used one.
TEST_P(MrCacheTest, EvictsTheLeastRecentlyUsed) {
  DeviceWindows device(kMax + 1);
  ASSERT_TRUE(device.ok());
  CounterDelta<Event> delta;
  for (size_t i = 0; i < kMax; ++i) cache_->release(lookup(device.window(i), 4096).entry);
  ASSERT_EQ(cache_->size(), kMax);
  cache_->release(lookup(device.window(0), 4096).entry);  // window 1 is now the oldest
  cache_->release(lookup(device.window(kMax), 4096).entry);
  EXPECT_EQ(cache_->size(), kMax);
  EXPECT_EQ(delta.get(Event::kEvictions), 1);
  EXPECT_EQ(delta.get(Event::kRegistrations), static_cast<int64_t>(kMax + 1));
  EXPECT_EQ(delta.get(Event::kLiveRegistrations), static_cast<int64_t>(kMax));
  // Window 0 survived (a hit); window 1 was closed (registered again).
  cache_->release(lookup(device.window(0), 4096).entry);
  EXPECT_EQ(delta.get(Event::kRegistrations), static_cast<int64_t>(kMax + 1));
  cache_->release(lookup(device.window(1), 4096).entry);
  EXPECT_EQ(delta.get(Event::kRegistrations), static_cast<int64_t>(kMax + 2));
  EXPECT_EQ(cache_->size(), kMax);
}

// An entry a send still uses is never closed: with every entry pinned, a miss gets no lease
// (the channel then copies) and the cache stays at its bound.
TEST_P(MrCacheTest, PinnedEntriesAreNeverEvicted) {
  DeviceWindows device(kMax + 1);
  ASSERT_TRUE(device.ok());
  CounterDelta<Event> delta;
  std::vector<MrCache::Lease> leases;
  for (size_t i = 0; i < kMax; ++i) leases.push_back(lookup(device.window(i), 4096));
  EXPECT_FALSE(lookup(device.window(kMax), 4096));
  EXPECT_EQ(cache_->size(), kMax);
  EXPECT_EQ(delta.get(Event::kEvictions), 0);
  // Unpinning window 5 (not the oldest) makes it the one to go.
  cache_->release(leases[5].entry);
  MrCache::Lease last = lookup(device.window(kMax), 4096);
  EXPECT_TRUE(last);
  EXPECT_EQ(delta.get(Event::kEvictions), 1);
  EXPECT_FALSE(lookup(device.window(5), 4096));  // gone, and no room: everything is pinned
  EXPECT_TRUE(lookup(device.window(0), 4096));   // still cached
  EXPECT_EQ(cache_->size(), kMax);
}

INSTANTIATE_TEST_SUITE_P(Providers, MrCacheTest, ::testing::Values("tcp", "shm"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trnccl::transport::ofi::test
