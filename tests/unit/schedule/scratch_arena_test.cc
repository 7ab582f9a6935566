// The scratch arena (schedule.h ScratchArena): a communicator's schedules run on one block of
// scratch kept from call to call, so a call whose scratch is as large as the buffer (Bruck's
// reduce-scatter, the all-to-all) does not fault fresh pages in every time.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "schedule/executor.h"
#include "schedule/schedule.h"

namespace trnccl::schedule {
namespace {

// A schedule that goes through scratch without a peer: src -> scratch -> dst.
Schedule throughScratch(const float* src, float* dst, size_t count) {
  Schedule s;
  std::byte* scratch = s.allocScratch(count * sizeof(float));
  s.add(Step{.prim = Primitive::kCopy, .src = src, .dst = scratch, .count = count});
  s.add(Step{.prim = Primitive::kCopy, .src = scratch, .dst = dst, .count = count});
  return s;
}

TEST(ScratchArena, ExecuteReusesOneBlockAcrossCalls) {
  constexpr size_t kCount = size_t{1} << 20;  // 4 MiB of floats
  std::vector<float> src(kCount), dst(kCount);
  std::iota(src.begin(), src.end(), 1.0f);
  const Schedule s = throughScratch(src.data(), dst.data(), kCount);
  ScratchArena arena;
  Doorbell bell;
  ExecContext ctx;
  ctx.bell = &bell;
  ctx.scratch = &arena;
  for (int call = 0; call < 3; ++call) {
    std::fill(dst.begin(), dst.end(), 0.0f);
    ASSERT_TRUE(execute(s, ctx).isOk()) << call;
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), kCount * sizeof(float)), 0) << call;
  }
  EXPECT_EQ(arena.allocations(), 1u);  // one block for the three calls
  // Without an arena every call allocates its own (the old behaviour), and still works.
  ctx.scratch = nullptr;
  std::fill(dst.begin(), dst.end(), 0.0f);
  ASSERT_TRUE(execute(s, ctx).isOk());
  EXPECT_EQ(dst.back(), src.back());
  EXPECT_EQ(arena.allocations(), 1u);
}

TEST(ScratchArena, SameAddressForTheNextRunAndOwnMemoryWhileLent) {
  Schedule s;
  std::byte* region = s.allocScratch(1 << 20);
  ScratchArena arena;
  std::byte* first = nullptr;
  {
    ScratchMemory m(s.scratchBytes(), &arena);
    first = m.map(region);
    first[0] = std::byte{1};
    // A second run while the block is lent (another stream of the communicator) gets memory
    // of its own, never the same bytes.
    ScratchMemory other(s.scratchBytes(), &arena);
    EXPECT_NE(other.map(region), first);
    other.map(region)[(1 << 20) - 1] = std::byte{2};  // real, writable memory
  }
  ScratchMemory again(s.scratchBytes(), &arena);
  EXPECT_EQ(again.map(region), first);
  EXPECT_EQ(arena.allocations(), 1u);
}

TEST(ScratchArena, GrowsToTheLargestAndStaysBounded) {
  ScratchArena arena(4 << 20);
  { ScratchArena::Lease small = arena.borrow(1 << 20); }
  EXPECT_EQ(arena.allocations(), 1u);
  { ScratchArena::Lease large = arena.borrow(3 << 20); }
  EXPECT_EQ(arena.allocations(), 2u);  // grown once
  {
    ScratchArena::Lease again = arena.borrow(1 << 20);  // a smaller call keeps the large block
    EXPECT_NE(again, nullptr);
  }
  EXPECT_EQ(arena.allocations(), 2u);
  // Over the bound: the caller allocates for itself, the arena keeps what it had.
  EXPECT_EQ(arena.borrow(5 << 20), nullptr);
  EXPECT_EQ(arena.borrow(0), nullptr);
  EXPECT_EQ(arena.allocations(), 2u);
  Schedule s;
  std::byte* region = s.allocScratch(5 << 20);
  ScratchMemory own(s.scratchBytes(), &arena);
  own.map(region)[(5 << 20) - 1] = std::byte{3};
  EXPECT_EQ(arena.allocations(), 2u);
}

// The byte counts are not cached with the schedule's Layout: a schedule run once as float and
// then as double (its public `type` changed) copies the double's bytes the second time.
TEST(ScratchArena, ARerunAfterTheTypeChangedMovesTheNewByteCount) {
  constexpr size_t kCount = 64;
  std::vector<double> src(kCount), dst(kCount);
  std::iota(src.begin(), src.end(), 1.0);
  Schedule s;
  std::byte* scratch = s.allocScratch(kCount * sizeof(double));
  s.type = device::DataType::kFloat32;
  s.add(Step{.prim = Primitive::kCopy, .src = src.data(), .dst = scratch, .count = kCount});
  s.add(Step{.prim = Primitive::kCopy, .src = scratch, .dst = dst.data(), .count = kCount});
  ScratchArena arena;
  Doorbell bell;
  ExecContext ctx;
  ctx.bell = &bell;
  ctx.scratch = &arena;
  ASSERT_TRUE(execute(s, ctx).isOk());
  EXPECT_EQ(dst[kCount / 2 - 1], src[kCount / 2 - 1]);  // the first half of the bytes
  EXPECT_EQ(dst[kCount / 2], 0.0);
  s.type = device::DataType::kFloat64;
  ASSERT_TRUE(execute(s, ctx).isOk());
  EXPECT_EQ(dst, src);
}

// The block is taken without a lock: two threads borrowing at once never get the same bytes.
TEST(ScratchArena, ConcurrentBorrowersNeverShareTheBlock) {
  ScratchArena arena;
  constexpr size_t kBytes = 4096;
  std::atomic<int> lent{0};
  std::atomic<bool> shared{false};
  auto borrower = [&](std::byte mark) {
    for (int i = 0; i < 20000; ++i) {
      ScratchArena::Lease lease = arena.borrow(kBytes);
      if (lease == nullptr) continue;  // the other thread holds it
      if (lent.fetch_add(1) != 0) shared = true;
      std::memset(lease.get(), static_cast<int>(mark), kBytes);
      for (size_t b = 0; b < kBytes; b += 512) {
        if (lease.get()[b] != mark) shared = true;
      }
      lent.fetch_sub(1);
    }
  };
  std::thread other(borrower, std::byte{1});
  borrower(std::byte{2});
  other.join();
  EXPECT_FALSE(shared.load());
  EXPECT_EQ(arena.allocations(), 1u);
}

}  // namespace
}  // namespace trnccl::schedule
