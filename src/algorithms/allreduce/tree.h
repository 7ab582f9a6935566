// Double binary tree all-reduce (tree.cc): a flat algorithm, and the sub-collective the
// hierarchy runs as its inter-instance step where the model finds it faster than a ring.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/cost.h"
#include "algorithms/ring_steps.h"

namespace trnccl::algorithms::allreduce {

extern const Algorithm kTree;

// The double binary tree all-reduce of `count` elements in -> out over group.members (in any
// order: the trees are over positions; this rank at group.pos), halves pipelined in chunks of
// sliceElems; the roots' final values divided by the schedule's nranks if postOp. The same
// signature as ringAllReduce, so a grid composition can run either on a column.
void treeAllReduce(schedule::Schedule& s, const Ring& group, const std::byte* in, std::byte* out,
                   size_t count, size_t sliceElems, bool postOp);

// The levels of the double binary tree over k positions, root-most first: a level is on `far`
// when one of its edges (in either tree) joins positions that `apart` says are on different
// instances, else on `near`.
std::vector<TreeLevel> treeLevels(int k, const std::function<bool(int, int)>& apart, LinkCost near,
                                  LinkCost far);

}  // namespace trnccl::algorithms::allreduce
