// Why two scratch regions per step, used by alternate slices: the next rank reads this rank's
// step-j region during its step j+1. The data that lets this rank reach step j of the next slice
// only proves the next rank finished step j; two slices later it proves step j+1 (steps of a
// rank run in order), so a region is never rewritten while a zero-copy reader may still use it.
#include "algorithms/ring_steps.h"

#include <algorithm>

#include "algorithms/patterns.h"

namespace trnccl::algorithms {

using schedule::Primitive;
using schedule::Step;

int Ring::prev() const { return members[mod(pos - 1, size())]; }
int Ring::next() const { return members[mod(pos + 1, size())]; }

Ring ringAt(const std::vector<int>& members, int rank) {
  auto it = std::find(members.begin(), members.end(), rank);
  return Ring{members, static_cast<int>(it - members.begin())};
}

std::vector<std::vector<int>> channelRings(const Shape* shape, int nranks) {
  std::vector<std::vector<int>> kept;
  // Per kept ring, next[a]: the directed edge a -> next[a] is taken.
  std::vector<std::vector<int>> nexts;
  for (const auto& ring : shape != nullptr ? shape->rings : std::vector<std::vector<int>>{}) {
    if (static_cast<int>(ring.size()) != nranks) continue;
    std::vector<int> next(ring.size(), -1);
    bool ok = true;
    for (int i = 0; i < nranks && ok; ++i) {
      const int a = ring[i];
      ok = a >= 0 && a < nranks && next[a] < 0;  // a permutation of 0..nranks-1
      if (ok) next[a] = ring[(i + 1) % nranks];
    }
    for (const auto& other : nexts) {
      for (int a = 0; a < nranks && ok; ++a) ok = other[a] != next[a];
    }
    if (!ok) continue;
    kept.push_back(ring);
    nexts.push_back(std::move(next));
  }
  if (kept.empty()) {
    kept.emplace_back(nranks);
    for (int i = 0; i < nranks; ++i) kept[0][i] = i;
  }
  return kept;
}

void interleaveChannels(schedule::Schedule& s, const std::vector<std::vector<Step>>& channels) {
  size_t longest = 0;
  for (const auto& c : channels) longest = std::max(longest, c.size());
  std::vector<Step> group;
  group.reserve(channels.size());
  for (size_t k = 0; k < longest; ++k) {
    group.clear();
    for (const auto& c : channels) {
      if (k < c.size()) group.push_back(c[k]);
    }
    s.addGroup(group);
  }
}

void ringChannels(schedule::Schedule& s, const CollArgs& a, size_t count,
                  const ChannelSteps& addChannel) {
  const auto rings = channelRings(a.shape.get(), a.nranks);
  const int channels = std::clamp(a.channels, 1, static_cast<int>(rings.size()));
  std::vector<std::vector<Step>> perChannel(channels);
  for (int c = 0; c < channels; ++c) {
    addChannel(ringAt(rings[c], a.rank), evenBlock(count, channels, c), perChannel[c]);
  }
  interleaveChannels(s, perChannel);
}

namespace {

size_t maxCount(const Ring& ring, const BlockCount& count) {
  size_t m = 0;
  for (int b = 0; b < ring.size(); ++b) m = std::max(m, count(b));
  return m;
}

// Elements of block b inside the slice starting at `base`.
size_t sliceOf(const BlockCount& count, int b, size_t base, size_t slice) {
  return sliceCount(count(b), base, slice);
}

}  // namespace

void ringReduceScatter(schedule::Schedule& s, const Ring& ring, const BlockPtr& in, std::byte* out,
                       const BlockCount& count, size_t sliceElems, bool postOp) {
  std::vector<Step> steps;
  ringReduceScatterSteps(s, steps, ring, in, out, count, sliceElems, postOp);
  for (const Step& step : steps) s.add(step);
}

void ringReduceScatterSteps(schedule::Schedule& s, std::vector<Step>& steps, const Ring& ring,
                            const BlockPtr& in, std::byte* out, const BlockCount& count,
                            size_t sliceElems, bool postOp) {
  const int n = ring.size(), r = ring.pos;
  const size_t elem = device::dataTypeSize(s.type);
  if (n == 1) {
    steps.push_back(Step{.prim = Primitive::kCopy, .src = in(0), .dst = out, .count = count(0)});
    return;
  }
  const size_t total = maxCount(ring, count);
  const size_t slice = std::max<size_t>(1, std::min(total, sliceElems));
  std::byte* scratch = n > 2 ? s.allocScratch(2 * (n - 2) * slice * elem) : nullptr;
  for (size_t base = 0, iter = 0; base < total; base += slice, ++iter) {
    auto from = [&](int b) { return in(mod(b, n)) + base * elem; };
    auto len = [&](int b) { return sliceOf(count, mod(b, n), base, slice); };
    steps.push_back(Step{.prim = Primitive::kSend,
                         .sendPeer = ring.next(),
                         .src = from(r - 1),
                         .count = len(r - 1)});
    for (int j = 2; j < n; ++j) {
      steps.push_back(Step{.prim = Primitive::kRecvReduceSend,
                           .recvPeer = ring.prev(),
                           .sendPeer = ring.next(),
                           .src = from(r - j),
                           .dst = scratch + (2 * (j - 2) + iter % 2) * slice * elem,
                           .count = len(r - j)});
    }
    steps.push_back(Step{.prim = Primitive::kRecvReduceCopy,
                         .recvPeer = ring.prev(),
                         .src = from(r),
                         .dst = out + base * elem,
                         .count = len(r),
                         .postOp = postOp});
  }
}

void ringAllGather(schedule::Schedule& s, const Ring& ring, const BlockPtr& buf,
                   const BlockCount& count, size_t sliceElems) {
  std::vector<Step> steps;
  ringAllGatherSteps(s, steps, ring, buf, count, sliceElems);
  for (const Step& step : steps) s.add(step);
}

void ringAllGatherSteps(const schedule::Schedule& s, std::vector<Step>& steps, const Ring& ring,
                        const BlockPtr& buf, const BlockCount& count, size_t sliceElems) {
  const int n = ring.size(), r = ring.pos;
  if (n == 1) return;
  const size_t elem = device::dataTypeSize(s.type);
  const size_t total = maxCount(ring, count);
  const size_t slice = std::max<size_t>(1, sliceElems);
  for (size_t base = 0; base < total; base += slice) {
    auto step = [&](int b, Primitive prim) {
      std::byte* at = buf(mod(b, n)) + base * elem;
      return Step{.prim = prim,
                  .recvPeer = schedule::receives(prim) ? ring.prev() : -1,
                  .sendPeer = schedule::sends(prim) ? ring.next() : -1,
                  .src = at,
                  .dst = at,
                  .count = sliceOf(count, mod(b, n), base, slice)};
    };
    steps.push_back(step(r, Primitive::kSend));
    for (int j = 1; j < n - 1; ++j) steps.push_back(step(r - j, Primitive::kRecvCopySend));
    steps.push_back(step(r + 1, Primitive::kRecv));
  }
}

void ringAllReduce(schedule::Schedule& s, const Ring& ring, const std::byte* in, std::byte* out,
                   size_t count, size_t sliceElems, bool postOp) {
  std::vector<Step> steps;
  ringAllReduceSteps(s, steps, ring, in, out, count, sliceElems, postOp);
  for (const Step& step : steps) s.add(step);
}

void ringAllReduceSteps(const schedule::Schedule& s, std::vector<Step>& steps, const Ring& ring,
                        const std::byte* in, std::byte* out, size_t count, size_t sliceElems,
                        bool postOp) {
  const int n = ring.size(), p = ring.pos;
  if (n == 1) {
    steps.push_back(Step{.prim = Primitive::kCopy, .src = in, .dst = out, .count = count});
    return;
  }
  const size_t elem = device::dataTypeSize(s.type);
  const size_t perIter = std::max<size_t>(1, sliceElems) * static_cast<size_t>(n);
  for (size_t base = 0; base < count; base += perIter) {
    const size_t chunk = std::min(perIter, count - base);
    auto block = [&](int b, Primitive prim, bool final = false) {
      const Block blk = evenBlock(chunk, n, mod(b, n));
      const size_t off = (base + blk.offset) * elem;
      return Step{.prim = prim,
                  .recvPeer = schedule::receives(prim) ? ring.prev() : -1,
                  .sendPeer = schedule::sends(prim) ? ring.next() : -1,
                  .src = in + off,
                  .dst = out + off,
                  .count = blk.count,
                  .postOp = final && postOp};
    };
    steps.push_back(block(p - 1, Primitive::kSend));
    for (int j = 2; j < n; ++j) steps.push_back(block(p - j, Primitive::kRecvReduceSend));
    steps.push_back(block(p, Primitive::kRecvReduceCopySend, true));
    for (int j = 1; j < n - 1; ++j) steps.push_back(block(p - j, Primitive::kRecvCopySend));
    steps.push_back(block(p + 1, Primitive::kRecv));
  }
}

}  // namespace trnccl::algorithms
