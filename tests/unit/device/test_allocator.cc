// The offset allocator behind trnrtMalloc: alignment, first fit, coalescing, bad frees.
#include <gtest/gtest.h>

#include "device/allocator.h"

namespace trnccl::device {
namespace {

constexpr size_t kA = OffsetAllocator::kAlignment;

TEST(OffsetAllocator, AlignsAndPacksFromZero) {
  OffsetAllocator alloc(16 * kA);
  EXPECT_EQ(alloc.allocate(1), 0u);
  EXPECT_EQ(alloc.allocate(kA), kA);
  EXPECT_EQ(alloc.allocate(kA + 1), 2 * kA);
  EXPECT_EQ(alloc.allocationSize(2 * kA), 2 * kA);
  EXPECT_EQ(alloc.freeBytes(), 12 * kA);
}

TEST(OffsetAllocator, SizeZeroGetsUniqueBlocks) {
  OffsetAllocator alloc(4 * kA);
  auto a = alloc.allocate(0);
  auto b = alloc.allocate(0);
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(alloc.free(*a));
  EXPECT_TRUE(alloc.free(*b));
}

TEST(OffsetAllocator, ExhaustionAndHugeRequests) {
  OffsetAllocator alloc(4 * kA);
  EXPECT_FALSE(alloc.allocate(5 * kA));
  EXPECT_FALSE(alloc.allocate(SIZE_MAX));  // must not overflow the rounding
  EXPECT_EQ(alloc.allocate(4 * kA), 0u);
  EXPECT_FALSE(alloc.allocate(1));
  EXPECT_EQ(alloc.freeBytes(), 0u);
}

TEST(OffsetAllocator, FirstFitReusesLowestHole) {
  OffsetAllocator alloc(8 * kA);
  auto a = alloc.allocate(kA);
  auto b = alloc.allocate(2 * kA);
  auto c = alloc.allocate(kA);
  ASSERT_TRUE(a && b && c);
  ASSERT_TRUE(alloc.free(*b));
  EXPECT_EQ(alloc.allocate(kA), *b);  // the hole at b, not the tail
}

TEST(OffsetAllocator, CoalescesBothNeighbours) {
  OffsetAllocator alloc(3 * kA);
  auto a = alloc.allocate(kA);
  auto b = alloc.allocate(kA);
  auto c = alloc.allocate(kA);
  ASSERT_TRUE(a && b && c);
  ASSERT_TRUE(alloc.free(*a));
  ASSERT_TRUE(alloc.free(*c));
  EXPECT_EQ(alloc.freeBlockCount(), 2u);
  ASSERT_TRUE(alloc.free(*b));
  EXPECT_EQ(alloc.freeBlockCount(), 1u);
  EXPECT_EQ(alloc.largestFreeBlock(), 3 * kA);
  EXPECT_EQ(alloc.allocate(3 * kA), 0u);
}

TEST(OffsetAllocator, RejectsBadFrees) {
  OffsetAllocator alloc(4 * kA);
  auto a = alloc.allocate(2 * kA);
  ASSERT_TRUE(a);
  EXPECT_FALSE(alloc.free(*a + kA));  // interior of an allocation
  EXPECT_FALSE(alloc.free(3 * kA));   // free space
  EXPECT_TRUE(alloc.free(*a));
  EXPECT_FALSE(alloc.free(*a));  // double free
  EXPECT_EQ(alloc.freeBytes(), 4 * kA);
}

}  // namespace
}  // namespace trnccl::device
