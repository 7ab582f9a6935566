// The reduce-scatter that deterministic algorithms share (Algorithm::foldsInRankOrder): every
// block goes straight to its owner, which folds the n contributions in rank order.
#pragma once

#include <cstddef>

#include "algorithms/algorithm.h"
#include "algorithms/ring_steps.h"
#include "schedule/schedule.h"

namespace trnccl::algorithms {

// Direct reduce-scatter folded in rank order: block b of every rank (at in(b), count(b)
// elements) goes to rank b, which computes op(...op(op(x0, x1), x2)..., x[n-1]) into `out`
// (divided by n if postOp), in slices of at most sliceElems elements.
//
// Round t is one group of every transfer of the t-th slices: this rank's slice of every other
// block to its owner, and every peer's contribution to this rank's block, x0 into `out` and
// the others into scratch (one slice per peer, reused by every round). All of them progress
// together, like a pairwise exchange, so no transfer ever waits for another and no connection
// needs to buffer anything (any buffer size, any transport). Then the fold runs locally
// (kReduce, one step per rank in rank order, the running value always the first operand).
// Arrivals are copied once more than a ring's, from the transport into scratch; the scratch
// is a slice per peer, so the fold then reads it from cache.
//
// In place (`out` is this rank's own block of `in`): a rank r > 0 first saves its slice to
// scratch, since x0 is received over it; rank 0's fold starts from x0 where it lies.
void orderedReduceScatter(schedule::Schedule& s, const CollArgs& a, const BlockPtr& in,
                          std::byte* out, const BlockCount& count, size_t sliceElems, bool postOp);

}  // namespace trnccl::algorithms
