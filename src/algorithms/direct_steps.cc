#include "algorithms/direct_steps.h"

#include <algorithm>
#include <vector>

#include "algorithms/patterns.h"

namespace trnccl::algorithms {

using schedule::Primitive;
using schedule::Step;

namespace {

size_t roundElems(size_t sliceElems) { return 2 * std::max<size_t>(1, sliceElems); }

size_t largest(const Ring& g, const BlockCount& count) {
  size_t m = 0;
  for (int b = 0; b < g.size(); ++b) m = std::max(m, count(b));
  return m;
}

// Elements of block b in the round starting at element `base`.
size_t inRound(const BlockCount& count, int b, size_t base, size_t round) {
  const size_t c = count(b);
  return c > base ? std::min(round, c - base) : 0;
}

// How this member folds its block: the members' contributions by ascending rank (a group's
// member list need not be sorted), the running value always the first operand, so the result is
// the left fold op(...op(op(x0, x1), x2)..., x[n-1]) over the group in rank order
// (Algorithm::foldsInRankOrder). Arrivals of later ranks wait in the connection meanwhile (it
// holds two rounds: see direct_steps.h). The running value lives in `out`, except in place while
// this member's own slice, under `out`, is still to be folded: then in `held` (scratch). Second
// in order, the member folds the first arrival and its own slice in one step (the arrival as the
// first operand), straight into `out`: no scratch, and one pass over the slice where a receive,
// a reduce and, in place, a copy back took three (at 2 ranks, rank 1's half of every mesh
// all-reduce; issue 14, transports/shm/README.md "In place against out of place").
struct Fold {
  std::vector<int> order;     // positions, by rank
  int own = 0;                // this member's index in `order`
  std::byte* held = nullptr;  // in place with own > 1: the running value until own is folded
};

Fold foldOf(schedule::Schedule& s, const Ring& g, const BlockPtr& in, const std::byte* out,
            const BlockCount& count, size_t round) {
  Fold f;
  f.order = everyRank(g.size());
  std::sort(f.order.begin(), f.order.end(),
            [&](int a, int b) { return g.members[a] < g.members[b]; });
  f.own = static_cast<int>(std::find(f.order.begin(), f.order.end(), g.pos) - f.order.begin());
  const size_t elem = device::dataTypeSize(s.type), mine = count(g.pos);
  if (f.own > 1 && overlaps(in(g.pos), out, mine * elem)) {
    f.held = s.allocScratch(std::max<size_t>(1, std::min(round, mine)) * elem);
  }
  return f;
}

// One reduce-scatter round: the sends and the first arrival together, then the fold in rank
// order (one arrival, or this member's own slice, per step).
void reduceScatterRound(schedule::Schedule& s, const Ring& g, const Fold& f, const BlockPtr& in,
                        std::byte* out, const BlockCount& count, size_t base, size_t round,
                        bool postOp) {
  const int n = g.size(), r = g.pos;
  const size_t elem = device::dataTypeSize(s.type);
  const size_t mine = inRound(count, r, base, round);
  const std::byte* own = in(r) + base * elem;
  std::byte* dst = out + base * elem;
  std::vector<Step> sends;
  for (int k = 1; k < n; ++k) {
    const int to = mod(r + k, n);
    sends.push_back(Step{.prim = Primitive::kSend,
                         .sendPeer = g.members[to],
                         .src = in(to) + base * elem,
                         .count = inRound(count, to, base, round)});
  }
  // The running value is read from `from` and written to `to` (they differ once, in place).
  std::byte* from = f.held != nullptr ? f.held : dst;
  std::byte* to = from;
  auto add = [&](const Step& step) {
    if (sends.empty()) return s.add(step);
    sends.push_back(step);
    s.addGroup(std::move(sends));
    sends.clear();
  };
  int i = 1;
  if (f.own <= 1) {
    // x0 (op) x1 into `out` in one step: this member's slice and the other of the first two.
    add(Step{.prim = Primitive::kRecvReduceCopy,
             .recvPeer = g.members[f.order[1 - f.own]],
             .src = own,
             .dst = dst,
             .count = mine,
             .postOp = postOp && n == 2,
             .incomingFirst = f.own == 1});
    from = to = dst;
    i = 2;
  } else {
    add(Step{
        .prim = Primitive::kRecv, .recvPeer = g.members[f.order[0]], .dst = from, .count = mine});
  }
  for (; i < n; ++i) {
    const bool last = i == n - 1;
    if (f.order[i] == r) {
      s.add(Step{.prim = Primitive::kReduce,
                 .src = own,
                 .dst = from,
                 .count = mine,
                 .postOp = postOp && last});
      to = dst;  // own is folded: `out` is free
      if (last && from != dst) {
        s.add(Step{.prim = Primitive::kCopy, .src = from, .dst = dst, .count = mine});
      }
      continue;
    }
    s.add(Step{.prim = Primitive::kRecvReduceCopy,
               .recvPeer = g.members[f.order[i]],
               .src = from,
               .dst = to,
               .count = mine,
               .postOp = postOp && last});
    from = to;
  }
}

void allGatherRound(schedule::Schedule& s, const Ring& g, const BlockPtr& buf,
                    const BlockCount& count, size_t base, size_t round) {
  const int n = g.size(), r = g.pos;
  const size_t elem = device::dataTypeSize(s.type);
  std::vector<Step> steps;
  for (int k = 1; k < n; ++k) {
    const int to = mod(r + k, n), from = mod(r - k, n);
    steps.push_back(Step{.prim = Primitive::kSend,
                         .sendPeer = g.members[to],
                         .src = buf(r) + base * elem,
                         .count = inRound(count, r, base, round)});
    steps.push_back(Step{.prim = Primitive::kRecv,
                         .recvPeer = g.members[from],
                         .dst = buf(from) + base * elem,
                         .count = inRound(count, from, base, round)});
  }
  s.addGroup(std::move(steps));
}

}  // namespace

void directReduceScatter(schedule::Schedule& s, const Ring& group, const BlockPtr& in,
                         std::byte* out, const BlockCount& count, size_t sliceElems, bool postOp) {
  if (group.size() == 1) {
    s.add(Step{.prim = Primitive::kCopy, .src = in(0), .dst = out, .count = count(0)});
    return;
  }
  const size_t round = roundElems(sliceElems), total = largest(group, count);
  const Fold fold = foldOf(s, group, in, out, count, round);
  for (size_t base = 0; base < total; base += round) {
    reduceScatterRound(s, group, fold, in, out, count, base, round, postOp);
  }
}

void directAllGather(schedule::Schedule& s, const Ring& group, const BlockPtr& buf,
                     const BlockCount& count, size_t sliceElems) {
  if (group.size() == 1) return;
  const size_t round = roundElems(sliceElems), total = largest(group, count);
  for (size_t base = 0; base < total; base += round) {
    allGatherRound(s, group, buf, count, base, round);
  }
}

void directAllReduce(schedule::Schedule& s, const Ring& group, const std::byte* in, std::byte* out,
                     size_t count, size_t sliceElems, bool postOp) {
  const int n = group.size();
  if (n == 1) {
    s.add(Step{.prim = Primitive::kCopy, .src = in, .dst = out, .count = count});
    return;
  }
  const size_t elem = device::dataTypeSize(s.type);
  auto offset = [&](int b) { return evenBlock(count, n, b).offset * elem; };
  auto cnt = [&](int b) { return evenBlock(count, n, b).count; };
  auto from = [&](int b) { return const_cast<std::byte*>(in) + offset(b); };
  auto to = [&](int b) { return out + offset(b); };
  const size_t round = roundElems(sliceElems), total = cnt(0);
  std::byte* mine = out + offset(group.pos);
  const Fold fold = foldOf(s, group, from, mine, cnt, round);
  for (size_t base = 0; base < total; base += round) {
    reduceScatterRound(s, group, fold, from, mine, cnt, base, round, postOp);
    allGatherRound(s, group, to, cnt, base, round);
  }
}

}  // namespace trnccl::algorithms
