#include "algorithms/direct_steps.h"

#include <algorithm>

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

// One reduce-scatter round: the sends and the first reduction together, the others in order.
void reduceScatterRound(schedule::Schedule& s, const Ring& g, const BlockPtr& in, std::byte* out,
                        const BlockCount& count, size_t base, size_t round, bool postOp) {
  const int n = g.size(), r = g.pos;
  const size_t elem = device::dataTypeSize(s.type);
  const size_t mine = inRound(count, r, base, round);
  std::vector<Step> sends;
  for (int k = 1; k < n; ++k) {
    const int to = mod(r + k, n);
    sends.push_back(Step{.prim = Primitive::kSend,
                         .sendPeer = g.members[to],
                         .src = in(to) + base * elem,
                         .count = inRound(count, to, base, round)});
  }
  for (int k = 1; k < n; ++k) {
    Step reduce{.prim = Primitive::kRecvReduceCopy,
                .recvPeer = g.members[mod(r - k, n)],
                .src = k == 1 ? in(r) + base * elem : out + base * elem,
                .dst = out + base * elem,
                .count = mine,
                .postOp = postOp && k == n - 1};
    if (k == 1) {
      sends.push_back(reduce);
      s.addGroup(std::move(sends));
    } else {
      s.add(reduce);
    }
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
  for (size_t base = 0; base < total; base += round) {
    reduceScatterRound(s, group, in, out, count, base, round, postOp);
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
  for (size_t base = 0; base < total; base += round) {
    reduceScatterRound(s, group, from, out + offset(group.pos), cnt, base, round, postOp);
    allGatherRound(s, group, to, cnt, base, round);
  }
}

}  // namespace trnccl::algorithms
