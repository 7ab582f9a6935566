// Ring sub-collectives over any ordered set of ranks, for composite algorithms (2D torus,
// hierarchical) to chain on subgroups. Blocks are addressed through functions so a composite
// can lay them out as it needs (contiguous, or one block per row of a grid).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/patterns.h"
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

// The ring `members` (any order) positioned at `rank`, which must be a member.
Ring ringAt(const std::vector<int>& members, int rank);

// The rings the channels of a ring algorithm may run on, channel c on the c-th: the shape's
// rings that are permutations of 0..nranks-1, each kept only if it shares no directed edge
// (a -> next(a)) with an earlier kept one; the natural order 0..nranks-1 when none is left.
// Why no shared directed edge: the channels' k-th steps run together (interleaveChannels), and
// a connection carries one message per direction at a time (transport.h), so two concurrent
// steps must never send to the same peer, nor receive from the same peer.
std::vector<std::vector<int>> channelRings(const Shape* shape, int nranks);

// Appends per-channel step lists to `s` so that the channels progress together: the k-th steps
// of all channels form one group (Schedule::addGroup drops the empty ones). Each list must hold the
// same logical steps on every rank (empty ones included), so that a group's steps match the peers'
// groups: the executor tags messages per directed connection in the order steps begin, and a
// channel's connections carry only that channel's messages.
void interleaveChannels(schedule::Schedule& s,
                        const std::vector<std::vector<schedule::Step>>& channels);

// The channels of a flat ring algorithm (allreduce/, allgather/ and reducescatter/ring.cc):
// channel c of args.channels (at most the usable rings, channelRings) moves part c of every
// block, evenBlock(count, channels, c), around the c-th ring, this rank positioned on it.
// addChannel(ring, part, steps) appends the channel's steps (the *Steps functions below); then
// the k-th steps of all channels run together (interleaveChannels).
using ChannelSteps =
    std::function<void(const Ring& ring, Block part, std::vector<schedule::Step>& steps)>;
void ringChannels(schedule::Schedule& s, const CollArgs& a, size_t count,
                  const ChannelSteps& addChannel);

using BlockPtr = std::function<std::byte*(int block)>;
using BlockCount = std::function<size_t(int block)>;

// Ring reduce-scatter: block b of every member (at `in(b)`, count(b) elements) is reduced over
// the ring; this member's block pos ends in `out` (divided by the schedule's nranks if postOp).
// Partial sums that are only forwarded live in schedule scratch. n-1 transfers per slice.
void ringReduceScatter(schedule::Schedule& s, const Ring& ring, const BlockPtr& in, std::byte* out,
                       const BlockCount& count, size_t sliceElems, bool postOp);
// The same steps appended to `steps` with the empty ones kept (for interleaveChannels); `s`
// gives the element type and owns the scratch.
void ringReduceScatterSteps(schedule::Schedule& s, std::vector<schedule::Step>& steps,
                            const Ring& ring, const BlockPtr& in, std::byte* out,
                            const BlockCount& count, size_t sliceElems, bool postOp);

// Ring all-gather: this member's block pos is already at buf(pos); afterwards every member has
// every block at buf(b). n-1 transfers per slice.
void ringAllGather(schedule::Schedule& s, const Ring& ring, const BlockPtr& buf,
                   const BlockCount& count, size_t sliceElems);
void ringAllGatherSteps(const schedule::Schedule& s, std::vector<schedule::Step>& steps,
                        const Ring& ring, const BlockPtr& buf, const BlockCount& count,
                        size_t sliceElems);

// Ring all-reduce of `count` elements at in -> out, the fused form (allreduce/ring.cc explains
// it): per iteration of ring.size() slices, send; recvReduceSend...; recvReduceCopySend (final,
// divided by the schedule's nranks if postOp); recvCopySend...; recv. Partial sums live in
// `out`. 2(n-1) transfers per iteration.
void ringAllReduce(schedule::Schedule& s, const Ring& ring, const std::byte* in, std::byte* out,
                   size_t count, size_t sliceElems, bool postOp);
void ringAllReduceSteps(const schedule::Schedule& s, std::vector<schedule::Step>& steps,
                        const Ring& ring, const std::byte* in, std::byte* out, size_t count,
                        size_t sliceElems, bool postOp);

}  // namespace trnccl::algorithms
