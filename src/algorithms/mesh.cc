// Mesh (direct) collectives, for the all-to-all NeuronSwitch fabric and for small messages:
// every rank exchanges with every peer directly, in O(1) steps.
//
// All-gather: one round, my block to every peer and every peer's block from it, concurrently.
// Reduce-scatter: round (1) of the all-reduce below, on blocks of recvcount.
// All-reduce:
// Composition: (1) send block k to rank k for every k concurrently, and fold the n blocks r,
// one peer at a time in rank order (x0 first, the own block at its place), into recvbuff block
// r (divided for avg): orderedReduceScatter in one round (ordered_steps.cc), so mesh gives the
// same bits as every algorithm that folds in rank order and runs in deterministic mode;
// (2) send the final block r to every peer, and receive every other final block, concurrently.
// Steps: 2 rounds; bytes per rank: 2(n-1)/n * S, like the ring, with latency 2 hops instead of
// 2(n-1). Supported while one block fits a connection's buffer twice over (each send completes
// without waiting for its receiver), i.e. for small messages. In place works: the own block is
// saved to scratch before x0 is received over it, and other blocks are sent before they are
// received into.
#include "algorithms/mesh.h"

#include <algorithm>
#include <cstdint>

#include "algorithms/cost.h"
#include "algorithms/ordered_steps.h"
#include "algorithms/patterns.h"

namespace trnccl::algorithms {

using schedule::Primitive;
using schedule::Step;

namespace {

// Direct all-gather: my block (at offset(r) of buf) to every peer, theirs into buf.
template <typename Offset, typename Count>
void directAllGather(schedule::Schedule& s, const CollArgs& a, std::byte* buf, Offset offset,
                     Count count) {
  const int n = a.nranks, r = a.rank;
  std::vector<Step> round;
  for (int k = 1; k < n; ++k) {
    int to = mod(r + k, n), from = mod(r - k, n);
    round.push_back(
        Step{.prim = Primitive::kSend, .sendPeer = to, .src = buf + offset(r), .count = count(r)});
    round.push_back(Step{.prim = Primitive::kRecv,
                         .recvPeer = from,
                         .dst = buf + offset(from),
                         .count = count(from)});
  }
  s.addGroup(std::move(round));
}

bool supports(const CollArgs& a) {
  // Each direct send must fit a connection's buffer, so sends never wait for their receiver.
  const size_t elem = device::dataTypeSize(a.type);
  size_t block = a.coll == Collective::kAllReduce ? evenBlock(a.count, a.nranks, 0).count : a.count;
  return a.nranks > 1 && block * elem <= 2 * a.sliceBytes;
}

schedule::Schedule allReduce(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kMeshAllReduce.name);
  const size_t elem = device::dataTypeSize(a.type);
  auto* send = const_cast<std::byte*>(static_cast<const std::byte*>(a.send));
  auto* recv = static_cast<std::byte*>(a.recv);
  auto offset = [&](int b) { return evenBlock(a.count, a.nranks, b).offset * elem; };
  auto count = [&](int b) { return evenBlock(a.count, a.nranks, b).count; };
  orderedReduceScatter(
      s, a, [&](int b) { return send + offset(b); }, recv + offset(a.rank), count, SIZE_MAX,
      a.op == device::RedOp::kAvg);
  directAllGather(s, a, recv, offset, count);
  return s;
}

schedule::Schedule allGather(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kMeshAllGather.name);
  const size_t block = a.count * device::dataTypeSize(a.type);
  auto* recv = static_cast<std::byte*>(a.recv);
  s.add(Step{
      .prim = Primitive::kCopy, .src = a.send, .dst = recv + a.rank * block, .count = a.count});
  directAllGather(
      s, a, recv, [&](int b) { return b * block; }, [&](int) { return a.count; });
  return s;
}

schedule::Schedule reduceScatter(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kMeshReduceScatter.name);
  const size_t block = a.count * device::dataTypeSize(a.type);
  auto* send = const_cast<std::byte*>(static_cast<const std::byte*>(a.send));
  orderedReduceScatter(
      s, a, [&](int b) { return send + b * block; }, static_cast<std::byte*>(a.recv),
      [&](int) { return a.count; }, SIZE_MAX, a.op == device::RedOp::kAvg);
  return s;
}

}  // namespace

const Algorithm kMeshAllReduce = {
    .name = "mesh",
    .description = "direct exchange with every peer in two rounds (small messages)",
    .supports = supports,
    .estimate = [](const CollArgs& a, const LinkModel& m) { return 2 * directPhase(a, m); },
    .usesChannels = false,
    .build = allReduce,
    .foldsInRankOrder = true,
};

const Algorithm kMeshAllGather = {
    .name = "mesh",
    .description = "every rank sends its block to every peer directly (small messages)",
    .supports = supports,
    .estimate = directPhase,
    .usesChannels = false,
    .build = allGather,
};

const Algorithm kMeshReduceScatter = {
    .name = "mesh",
    .description = "direct exchange with every peer in one round (small messages)",
    .supports = supports,
    .estimate = directPhase,
    .usesChannels = false,
    .build = reduceScatter,
    .foldsInRankOrder = true,
};

}  // namespace trnccl::algorithms
