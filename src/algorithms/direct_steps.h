// Direct (mesh) sub-collectives over any set of ranks: every member exchanges with every other
// member in one round, in slices so that large buffers stream. Used by mesh.cc and the
// NeuronSwitch compositions (twoshot.cc, twotier.cc), which differ in the groups they run them on.
//
// Why a message may hold two slices (`sliceElems` is a quarter of a connection buffer): a member
// begins round k+1 only after every member's round-k message reached it, and those are sent only
// after their senders finished round k-1; so a connection holds at most two rounds' messages,
// and every send completes without waiting for its receiver.
#pragma once

#include "algorithms/ring_steps.h"

namespace trnccl::algorithms {

// Direct reduce-scatter: block b (in(b), count(b) elements) goes to member b; the copies of this
// member's block are folded into `out` in the members' rank order, op(...op(op(x0, x1), x2)...)
// with the running value the first operand (divided by the schedule's nranks after the last if
// postOp): over the whole communicator, the rank-order fold of Algorithm::foldsInRankOrder. One
// arrival per step; in place, the running value waits in scratch until this member's own slice
// (under `out`) is folded. Rounds of at most 2 * sliceElems per block.
void directReduceScatter(schedule::Schedule& s, const Ring& group, const BlockPtr& in,
                         std::byte* out, const BlockCount& count, size_t sliceElems, bool postOp);

// Direct all-gather: this member's block, at buf(pos), to every member; theirs into buf(b).
// Rounds of at most 2 * sliceElems per block.
void directAllGather(schedule::Schedule& s, const Ring& group, const BlockPtr& buf,
                     const BlockCount& count, size_t sliceElems);

// Direct all-reduce of `count` elements in -> out: a direct reduce-scatter of the member blocks
// (evenBlock) then a direct all-gather, slice by slice (each slice's reduce-scatter round, then
// its all-gather round). Each element's final value is computed once, by its block's member.
void directAllReduce(schedule::Schedule& s, const Ring& group, const std::byte* in, std::byte* out,
                     size_t count, size_t sliceElems, bool postOp);

}  // namespace trnccl::algorithms
