// Pure rank and block arithmetic shared by the algorithms (STYLE.md rule 4); unit-tested.
#pragma once

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

}  // namespace trnccl::algorithms
