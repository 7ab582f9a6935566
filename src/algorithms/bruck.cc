// Bruck all-gather and reduce-scatter (Bruck et al., "Efficient algorithms for all-to-all
// communications in multiport message-passing systems", 1997; NCCL's PAT is a variation):
// ceil(log2 n) exchanges instead of the ring's n - 1, for small sizes at scale.
//
// All-gather: my block is copied to its place in recvbuff (block r at r * count) right after
// the first exchange, which sends it from sendbuff (out of place). At distance
// d = 1, 2, 4, ... < n, rank r holds blocks r .. r+d-1 (mod n); it sends the first
// len = min(d, n - d) of them to rank r - d while it receives blocks r+d .. r+d+len-1 from rank
// r + d straight into their final places: no rotation at the end. Blocks are copied, never
// combined, so all ranks agree bitwise. In place (sendbuff = recvbuff + r * count): the copy is
// a no-op, and no block is written after it was sent.
// Reduce-scatter: the same exchanges backwards (the all-gather's transpose), carrying partial
// sums. sendbuff is copied to scratch (partial[b] = my contribution to block b); at distances
// d = 2^(ceil(log2 n)-1) down to 1, rank r holds partials of blocks r .. r+2d-1 (all n at
// first), sends those of blocks r+d .. r+d+len-1 to rank r + d and reduces the partials of
// blocks r .. r+len-1 that rank r - d sends into its own; the last exchange (d = 1) brings
// block r's last partial, reduced into recvbuff (divided by n for avg). Each rank keeps its own
// block, a sum over a tree of partials. In place (recvbuff = sendbuff + r * count): sendbuff is
// read once, by the first copy; a partial sent at distance d is never written again (later
// exchanges reduce into r .. r+d-1 only).
// Steps: ceil(log2 n) exchanges; a range that wraps past block n-1 is two messages, split alike
// by sender and receiver (patterns.h ringRuns). Bytes per rank: (n-1)/n * S, like the ring;
// reduce-scatter scratch: S.
#include "algorithms/bruck.h"

#include "algorithms/cost.h"
#include "algorithms/patterns.h"

namespace trnccl::algorithms {
namespace {

using schedule::Primitive;
using schedule::Step;

// One exchange of blocks (`count` elements each): the runs of `give`, run i read at
// from(first block of run i), go to rank `to` while `take` receives the same-shaped runs of its
// blocks from its peer, each run as one group. take(run) builds the receiving step of a run.
template <typename From, typename Take>
void exchange(schedule::Schedule& s, int to, From from, const BlockRuns& give, size_t count,
              const BlockRuns& take, Take receive) {
  for (int i = 0; i < 2; ++i) {
    s.addGroup({Step{.prim = Primitive::kSend,
                     .sendPeer = to,
                     .src = from(give.run[i].first),
                     .count = give.run[i].len * count},
                receive(take.run[i])});
  }
}

schedule::Schedule allGather(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kBruckAllGather.name);
  const int n = a.nranks, r = a.rank;
  auto* recv = static_cast<std::byte*>(a.recv);
  const size_t block = a.count * device::dataTypeSize(a.type);
  for (int d = 1; d < n; d *= 2) {
    const int len = std::min(d, n - d);
    // The first exchange gives my block alone, from sendbuff: the peer reads it while my
    // block is not yet in recvbuff (copied right after, before a later exchange sends it
    // from there). Copying first kept every call's exchanges waiting for that copy.
    auto from = [&](int b) { return d == 1 ? a.send : recv + b * block; };
    exchange(s, mod(r - d, n), from, ringRuns(n, r, len), a.count, ringRuns(n, mod(r + d, n), len),
             [&](BlockRun run) {
               return Step{.prim = Primitive::kRecv,
                           .recvPeer = mod(r + d, n),
                           .dst = recv + run.first * block,
                           .count = run.len * a.count};
             });
    if (d == 1) {
      s.add(
          Step{.prim = Primitive::kCopy, .src = a.send, .dst = recv + r * block, .count = a.count});
    }
  }
  return s;
}

schedule::Schedule reduceScatter(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kBruckReduceScatter.name);
  const int n = a.nranks, r = a.rank;
  const size_t block = a.count * device::dataTypeSize(a.type);
  auto* recv = static_cast<std::byte*>(a.recv);
  std::byte* partial = s.allocScratch(n * block);
  s.add(Step{.prim = Primitive::kCopy, .src = a.send, .dst = partial, .count = n * a.count});
  int top = 1;
  while (2 * top < n) top *= 2;
  for (int d = top; d >= 1; d /= 2) {
    const int len = std::min(d, n - d);
    exchange(
        s, mod(r + d, n), [&](int b) { return partial + b * block; },
        ringRuns(n, mod(r + d, n), len), a.count, ringRuns(n, r, len),
        [&](BlockRun run) {
          std::byte* mine = partial + run.first * block;
          return Step{.prim = Primitive::kRecvReduceCopy,
                      .recvPeer = mod(r - d, n),
                      .src = mine,
                      .dst = d == 1 ? recv : mine,
                      .count = run.len * a.count,
                      .postOp = d == 1 && a.op == device::RedOp::kAvg};
        });
  }
  return s;
}

bool supports(const CollArgs& a) { return a.nranks > 1; }

}  // namespace

const Algorithm kBruckAllGather = {
    .name = "bruck",
    .description = "log2 n exchanges at doubling distances, blocks straight to their places",
    .supports = supports,
    .estimate = bruckPhase,
    .usesChannels = false,
    .build = allGather,
};

const Algorithm kBruckReduceScatter = {
    .name = "bruck",
    .description = "Bruck's exchanges backwards, partial sums at halving distances",
    .supports = supports,
    .estimate = bruckPhase,
    .usesChannels = false,
    .build = reduceScatter,
};

}  // namespace trnccl::algorithms
