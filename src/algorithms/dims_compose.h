// Collectives composed along the dimensions of a box of ranks (algorithms::RankDims), one
// sub-collective per dimension on the lines through this rank: the 2D grid composition
// (grid_compose.h) generalised to N dimensions. The N-dimensional torus runs ring phases on
// it (torus3d.cc); the NeuronSwitch compositions direct phases (twoshot.cc, twotier.cc).
#pragma once

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost.h"

namespace trnccl::algorithms {

// The sub-collective each dimension runs: a pipelined ring (ring_steps.h) or a direct exchange
// among the line's ranks (direct_steps.h).
enum class Phase { kRing, kDirect };

// The dimensions of size > 1 in reduce-scatter order: the permutation whose phases cost least.
// Phase i moves S / (n1 ... n(i-1)) bytes, so the widest dimensions go first; latencies add up
// the same in any order. All-gathers run it backwards. Ties keep the dimensions' order.
std::vector<int> dimsOrder(const RankDims& t);

// All-reduce: reduce-scatter along each dimension in order, an all-reduce along the last, then
// all-gathers back. Each element's final value is computed once (the last dimension's owner).
schedule::Schedule dimsAllReduce(const CollArgs& a, const RankDims& t, Phase phase,
                                 const char* name);
// Reduce-scatter: sendbuff copied into scratch in "order-major" layout (so that every phase's
// blocks are contiguous), then a reduce-scatter along each dimension, the last into recvbuff.
schedule::Schedule dimsReduceScatter(const CollArgs& a, const RankDims& t, Phase phase,
                                     const char* name);
// All-gather: the reverse in the same layout, then the blocks copied into rank order (skipped
// when the layout is rank order).
schedule::Schedule dimsAllGather(const CollArgs& a, const RankDims& t, Phase phase,
                                 const char* name);

// The model's time of the composition for a.coll (twice the phases for an all-reduce): a ring
// phase is ringPhase on the dimension's link; a direct phase its rounds' latencies and
// messages (m.messageUs each) plus its bytes, a reduce-scatter's reductions where slower.
double dimsEstimate(const CollArgs& a, const RankDims& t, Phase phase, const LinkModel& m);

}  // namespace trnccl::algorithms
