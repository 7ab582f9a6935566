// Mesh (direct) collectives, for the all-to-all NeuronSwitch fabric and for small messages:
// every rank exchanges with every peer directly, in O(1) steps.
//
// All-gather: one round, my block to every peer and every peer's block from it, concurrently.
// Reduce-scatter: round (1) of the all-reduce below, on blocks of recvcount.
// All-reduce:
// Composition: (1) send block k to rank k for every k concurrently, and reduce the n-1 blocks
// r that arrive, one peer at a time in rank order, into recvbuff block r (divided for avg);
// (2) send the final block r to every peer, and receive every other final block, concurrently.
// Steps: 2 rounds; bytes per rank: 2(n-1)/n * S, like the ring, with latency 2 hops instead of
// 2(n-1). Supported while one block fits a connection's buffer twice over (each send completes
// without waiting for its receiver), i.e. for small messages. In place works: block r is read
// (as the reduction's first operand) before it is written, and other blocks are sent before
// they are received into.
#include "algorithms/mesh.h"

#include <algorithm>

#include "algorithms/cost.h"
#include "algorithms/patterns.h"

namespace trnccl::algorithms {

using schedule::Primitive;
using schedule::Step;

namespace {

// Direct reduce-scatter: block k of `send` (at offset(k), count(k)) goes to rank k; the n-1
// incoming copies of my block are reduced in, one peer at a time, into `out`.
template <typename Offset, typename Count>
void directReduceScatter(schedule::Schedule& s, const CollArgs& a, const std::byte* send,
                         std::byte* out, Offset offset, Count count) {
  const int n = a.nranks, r = a.rank;
  std::vector<Step> round;
  for (int k = 1; k < n; ++k) {
    int to = mod(r + k, n);
    round.push_back(Step{
        .prim = Primitive::kSend, .sendPeer = to, .src = send + offset(to), .count = count(to)});
  }
  // The first reduction joins the sends; the others follow in order.
  round.push_back(Step{.prim = Primitive::kRecvReduceCopy,
                       .recvPeer = mod(r - 1, n),
                       .src = send + offset(r),
                       .dst = out,
                       .count = count(r),
                       .postOp = a.op == device::RedOp::kAvg && n == 2});
  s.addGroup(std::move(round));
  for (int k = 2; k < n; ++k) {
    s.add(Step{.prim = Primitive::kRecvReduceCopy,
               .recvPeer = mod(r - k, n),
               .src = out,
               .dst = out,
               .count = count(r),
               .postOp = a.op == device::RedOp::kAvg && k == n - 1});
  }
}

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
  auto* recv = static_cast<std::byte*>(a.recv);
  auto offset = [&](int b) { return evenBlock(a.count, a.nranks, b).offset * elem; };
  auto count = [&](int b) { return evenBlock(a.count, a.nranks, b).count; };
  directReduceScatter(s, a, static_cast<const std::byte*>(a.send), recv + offset(a.rank), offset,
                      count);
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
  directReduceScatter(
      s, a, static_cast<const std::byte*>(a.send), static_cast<std::byte*>(a.recv),
      [&](int b) { return b * block; }, [&](int) { return a.count; });
  return s;
}

// One round of direct transfers: the n-1 blocks of S/n cross the torus links they share, so
// each is slowed (and delayed) by the average hops of a direct transfer. Across instances the
// messages to the other instances' ranks also queue on the rank's rail, one after another.
double directRound(const CollArgs& a, const LinkModel& m) {
  const LinkCost flat = flatLink(m);
  const double hops = std::max(1.0, m.meshHops);
  const double bw = flat.bandwidth / hops, lat = flat.latencyUs * hops;
  const int n = a.nranks;
  const Grid* instances = a.shape != nullptr ? &a.shape->instances : nullptr;
  const int local = instances != nullptr && !instances->rows.empty()
                        ? static_cast<int>(instances->rows[0].size())
                        : n;
  const double queued = m.multiInstance ? extraMessagesUs(n - local + 1) : 0;
  return lat + queued + (n - 1) * (totalBytes(a) / n) / (bw * 1e3);
}

}  // namespace

const Algorithm kMeshAllReduce = {
    .name = "mesh",
    .description = "direct exchange with every peer in two rounds (small messages)",
    .supports = supports,
    .estimate = [](const CollArgs& a, const LinkModel& m) { return 2 * directRound(a, m); },
    .usesChannels = false,
    .build = allReduce,
};

const Algorithm kMeshAllGather = {
    .name = "mesh",
    .description = "every rank sends its block to every peer directly (small messages)",
    .supports = supports,
    .estimate = directRound,
    .usesChannels = false,
    .build = allGather,
};

const Algorithm kMeshReduceScatter = {
    .name = "mesh",
    .description = "direct exchange with every peer in one round (small messages)",
    .supports = supports,
    .estimate = directRound,
    .usesChannels = false,
    .build = reduceScatter,
};

}  // namespace trnccl::algorithms
