// The double binary tree (patterns.h, allreduce/tree.cc): NCCL's tree shape, its mirror, the
// levels the cost model charges, and schedules whose transfers pair up on every connection.
#include "algorithms/allreduce/tree.h"

#include <gtest/gtest.h>

#include <vector>

#include "algorithms/patterns.h"
#include "schedule_pairs.h"

namespace trnccl::algorithms {
namespace {

using schedule::Primitive;

int depthOf(int n, int pos, int t) {
  int d = 0;
  for (int p = pos; (p = doubleBinaryTree(n, p, t).parent) >= 0;) ++d;
  return d;
}

TEST(BinaryTree, NcclShape) {
  // 0 on top with one child; below it in order: 8 -> 4, 12; 4 -> 2, 6; 12 -> 10, 13 (14 is out).
  EXPECT_EQ(binaryTree(14, 0).child[0], 8);
  EXPECT_EQ(binaryTree(14, 0).child[1], -1);
  EXPECT_EQ(binaryTree(14, 8).parent, 0);
  EXPECT_EQ(binaryTree(14, 12).child[0], 10);
  EXPECT_EQ(binaryTree(14, 12).child[1], 13);
  EXPECT_EQ(binaryTree(14, 13).parent, 12);
  EXPECT_EQ(binaryTree(14, 5).parent, 6);
  EXPECT_EQ(binaryTree(14, 5).child[0], -1);
}

TEST(BinaryTree, BothTreesSpanEveryPositionWithinTheirDepth) {
  for (int n = 1; n <= 70; ++n) {
    for (int t = 0; t < 2; ++t) {
      int roots = 0;
      for (int pos = 0; pos < n; ++pos) {
        const TreeNode node = doubleBinaryTree(n, pos, t);
        if (node.parent < 0) ++roots;
        if (node.parent >= 0) {
          const TreeNode up = doubleBinaryTree(n, node.parent, t);
          EXPECT_TRUE(up.child[0] == pos || up.child[1] == pos) << n << " " << pos << " " << t;
        }
        for (int c : node.child) {
          if (c >= 0) {
            EXPECT_EQ(doubleBinaryTree(n, c, t).parent, pos) << n << " " << pos;
          }
        }
        EXPECT_LE(depthOf(n, pos, t), treeDepth(n)) << n << " " << pos << " " << t;
      }
      EXPECT_EQ(roots, 1) << n << " " << t;
    }
  }
}

TEST(BinaryTree, EvenCountsMakeEveryRankALeafInOneTree) {
  for (int n = 2; n <= 64; n += 2) {
    for (int pos = 0; pos < n; ++pos) {
      auto leaf = [&](int t) { return doubleBinaryTree(n, pos, t).child[0] < 0; };
      EXPECT_TRUE(leaf(0) || leaf(1)) << n << " " << pos;
    }
  }
}

TEST(TreeLevels, EachOnItsLinkTheRootWithOneChild) {
  // 2048 positions: 11 levels, level l on link(l) (cost.h levelLink gives the tree's edges of
  // that length), the root's with one child.
  auto levels = allreduce::treeLevels(2048, [](int level) { return LinkCost{1.0 * level, 100}; });
  ASSERT_EQ(levels.size(), 11u);
  for (size_t l = 0; l < levels.size(); ++l) {
    EXPECT_EQ(levels[l].link.latencyUs, l + 1.0) << "level " << l;
    EXPECT_EQ(levels[l].fanIn, l == 0 ? 1 : 2) << "level " << l;
  }
}

std::vector<schedule::Schedule> treeSchedules(int n, size_t count, size_t slice,
                                              std::vector<float>& buf) {
  std::vector<schedule::Schedule> out;
  std::vector<int> members(n);  // reversed: the trees are over positions, not ranks
  for (int i = 0; i < n; ++i) members[i] = n - 1 - i;
  for (int r = 0; r < n; ++r) {
    CollArgs a;
    a.nranks = n;
    schedule::Schedule s = startSchedule(a, "tree");
    auto* p = reinterpret_cast<std::byte*>(buf.data());
    allreduce::treeAllReduce(s, Ring{members, n - 1 - r}, p, p, count, slice, true);
    out.push_back(std::move(s));
  }
  return out;
}

TEST(TreeAllReduce, TransfersPairUpOnEveryConnection) {
  std::vector<float> buf(1000);
  for (int n : {2, 3, 4, 5, 7, 8, 13, 16}) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{1000}}) {
      SCOPED_TRACE(::testing::Message() << n << " ranks, " << count << " elements");
      testing::expectPairedTransfers(treeSchedules(n, count, 64, buf));
    }
  }
}

TEST(TreeAllReduce, RootsFinishEachHalfOnce) {
  // 8 ranks, 1000 elements, chunks of 100: each half (500) is 5 chunks; its tree's root makes
  // every element final once (postOp), and every other rank receives it once.
  std::vector<float> buf(1000);
  auto all = treeSchedules(8, 1000, 100, buf);
  size_t finals = 0, received = 0;
  for (const auto& s : all) {
    for (const auto& st : s.steps()) {
      if (st.postOp) finals += st.count;
      if (st.prim == Primitive::kRecv || st.prim == Primitive::kRecvCopySend) {
        received += st.count;
      }
    }
  }
  EXPECT_EQ(finals, 1000u);
  EXPECT_EQ(received, 7u * 1000u);
}

}  // namespace
}  // namespace trnccl::algorithms
