// Pure rank and block arithmetic shared by the algorithms (STYLE.md rule 4); unit-tested.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace trnccl::algorithms {

// (a mod n) for possibly negative a.
constexpr int mod(int a, int n) { return ((a % n) + n) % n; }

constexpr int ringNext(int rank, int nranks) { return mod(rank + 1, nranks); }
// 0 .. n-1: every rank of a communicator, in rank order.
inline std::vector<int> everyRank(int n) {
  std::vector<int> all(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
  return all;
}
constexpr int ringPrev(int rank, int nranks) { return mod(rank - 1, nranks); }

// Splits `count` elements into `parts` contiguous blocks whose sizes differ by at most one
// (the first count % parts blocks get the extra element).
struct Block {
  size_t offset;
  size_t count;
};
constexpr Block evenBlock(size_t count, int parts, int index) {
  size_t base = count / static_cast<size_t>(parts);
  size_t extra = count % static_cast<size_t>(parts);
  size_t i = static_cast<size_t>(index);
  return {i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
}

// Elements of a block of `count` elements inside the slice [base, base + slice).
constexpr size_t sliceCount(size_t count, size_t base, size_t slice) {
  return count > base ? (slice < count - base ? slice : count - base) : 0;
}

// Whether regions [a, a + bytes) and [b, b + bytes) share a byte: a sub-collective's output
// over its own input block (in place).
inline bool overlaps(const std::byte* a, const std::byte* b, size_t bytes) {
  return bytes > 0 && a < b + bytes && b < a + bytes;
}

// Blocks first, first+1, ..., first+len-1 of n taken mod n (len <= n), as at most two runs of
// consecutive indices: [first, n) and then [0, rest) when the range wraps (the second run's len
// is 0 otherwise).
struct BlockRun {
  int first;
  int len;
};
struct BlockRuns {
  BlockRun run[2];
};
constexpr BlockRuns ringRuns(int n, int first, int len) {
  const int head = std::min(len, n - first);
  return BlockRuns{{{first, head}, {0, len - head}}};
}

// NCCL's binary tree over positions 0..n-1 (src/graph/trees.cc): position 0 on top with one
// child, the largest power of two below n; under it an in-order tree where a position whose
// lowest set bit is b has children pos - b/2 and pos + b/2 (at a smaller offset when that is
// past n), so odd positions are leaves. An edge below a position with lowest bit b stays inside
// an aligned block of 2b positions: the lower levels stay inside aligned groups of ranks.
struct TreeNode {
  int parent = -1;  // -1: the root
  int child[2] = {-1, -1};
};
constexpr TreeNode binaryTree(int n, int pos) {
  TreeNode t;
  int bit = 1;
  while (bit < n && (pos & bit) == 0) bit <<= 1;
  if (pos == 0) {
    if (n > 1) t.child[0] = bit >> 1;
    return t;
  }
  t.parent = (pos ^ bit) | (bit << 1);
  if (t.parent >= n) t.parent = pos ^ bit;
  int low = bit >> 1;
  if (low == 0) return t;
  t.child[0] = pos - low;
  while (low > 0 && pos + low >= n) low >>= 1;
  t.child[1] = low > 0 ? pos + low : -1;
  return t;
}

// Tree t (0 or 1) of a double binary tree: tree 0 is binaryTree, tree 1 its mirror image
// (position n-1-p) for even n, its shift by one for odd n. For even n every position is a
// leaf (odd in its tree) in one of the two trees.
constexpr TreeNode doubleBinaryTree(int n, int pos, int t) {
  if (t == 0) return binaryTree(n, pos);
  const bool even = n % 2 == 0;
  auto to = [&](int p) { return even ? n - 1 - p : mod(p - 1, n); };
  auto from = [&](int q) { return q < 0 ? -1 : even ? n - 1 - q : mod(q + 1, n); };
  TreeNode m = binaryTree(n, to(pos));
  return TreeNode{from(m.parent), {from(m.child[0]), from(m.child[1])}};
}

// Levels of the trees above: the smallest d with 2^d >= n (no position is deeper).
constexpr int treeDepth(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

}  // namespace trnccl::algorithms
