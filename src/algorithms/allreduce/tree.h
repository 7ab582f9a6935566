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

// The levels of the double binary tree over k positions, root-most first (level 1: the root's
// edge), each on link(level).
std::vector<TreeLevel> treeLevels(int k, const std::function<LinkCost(int level)>& link);

}  // namespace trnccl::algorithms::allreduce
