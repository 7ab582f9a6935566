// Ring sub-collectives over any ordered set of ranks, for composite algorithms (2D torus,
// hierarchical) to chain on subgroups. Blocks are addressed through functions so a composite
// can lay them out as it needs (contiguous, or one block per row of a grid).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "schedule/schedule.h"

namespace trnccl::algorithms {

// The members of a ring in ring order, and this rank's position among them.
struct Ring {
  std::vector<int> members;
  int pos = 0;
  int size() const { return static_cast<int>(members.size()); }
  int prev() const;
  int next() const;
};

using BlockPtr = std::function<std::byte*(int block)>;
using BlockCount = std::function<size_t(int block)>;

// Ring reduce-scatter: block b of every member (at `in(b)`, count(b) elements) is reduced over
// the ring; this member's block pos ends in `out` (divided by the schedule's nranks if postOp).
// Partial sums that are only forwarded live in schedule scratch. n-1 transfers per slice.
void ringReduceScatter(schedule::Schedule& s, const Ring& ring, const BlockPtr& in,
                       std::byte* out, const BlockCount& count, size_t sliceElems, bool postOp);

// Ring all-gather: this member's block pos is already at buf(pos); afterwards every member has
// every block at buf(b). n-1 transfers per slice.
void ringAllGather(schedule::Schedule& s, const Ring& ring, const BlockPtr& buf,
                   const BlockCount& count, size_t sliceElems);

// Ring all-reduce of `count` elements at in -> out over the ring (reduce-scatter into out's
// own block, then all-gather in out).
void ringAllReduce(schedule::Schedule& s, const Ring& ring, const std::byte* in, std::byte* out,
                   size_t count, size_t sliceElems, bool postOp);

}  // namespace trnccl::algorithms
