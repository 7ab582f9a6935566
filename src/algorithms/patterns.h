// Pure rank and block arithmetic shared by the algorithms (STYLE.md rule 4); unit-tested.
#pragma once

#include <cstddef>

namespace trnccl::algorithms {

// (a mod n) for possibly negative a.
constexpr int mod(int a, int n) { return ((a % n) + n) % n; }

constexpr int ringNext(int rank, int nranks) { return mod(rank + 1, nranks); }
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

}  // namespace trnccl::algorithms
