#include "algorithms/ordered_steps.h"

#include <algorithm>
#include <vector>

#include "algorithms/patterns.h"

namespace trnccl::algorithms {

using schedule::Primitive;
using schedule::Step;

void orderedReduceScatter(schedule::Schedule& s, const CollArgs& a, const BlockPtr& in,
                          std::byte* out, const BlockCount& count, size_t sliceElems, bool postOp) {
  const int n = a.nranks, r = a.rank;
  if (n == 1) {
    s.add(Step{.prim = Primitive::kCopy, .src = in(0), .dst = out, .count = count(0)});
    return;
  }
  const size_t elem = device::dataTypeSize(a.type);
  size_t total = 0;
  for (int b = 0; b < n; ++b) total = std::max(total, count(b));
  const size_t slice = std::max<size_t>(1, std::min(total, sliceElems));
  const size_t mineMax = std::min(slice, count(r));
  // x[j] of this rank's slice for every j but 0 (received into `out`) and r (local): index j.
  std::byte* arrivals = s.allocScratch(std::max<size_t>(1, n * mineMax * elem));
  const std::byte* own = in(r);
  const bool inPlace = overlaps(own, out, count(r) * elem);
  for (size_t base = 0; base < total; base += slice) {
    const size_t c = sliceCount(count(r), base, slice);
    std::byte* acc = out + base * elem;
    auto contribution = [&](int j) -> const std::byte* {
      if (j == r) return inPlace && r > 0 ? arrivals : own + base * elem;  // slot 0: saved
      return j == 0 ? acc : arrivals + j * mineMax * elem;
    };
    if (inPlace && r > 0) {
      s.add(Step{.prim = Primitive::kCopy, .src = own + base * elem, .dst = arrivals, .count = c});
    }
    if (!inPlace && r == 0) {
      s.add(Step{.prim = Primitive::kCopy, .src = own + base * elem, .dst = acc, .count = c});
    }
    std::vector<Step> round;
    for (int k = 1; k < n; ++k) {
      const int to = mod(r + k, n), from = mod(r - k, n);
      round.push_back(Step{.prim = Primitive::kSend,
                           .sendPeer = to,
                           .src = in(to) + base * elem,
                           .count = sliceCount(count(to), base, slice)});
      round.push_back(Step{.prim = Primitive::kRecv,
                           .recvPeer = from,
                           .dst = const_cast<std::byte*>(contribution(from)),
                           .count = c});
    }
    s.addGroup(std::move(round));
    for (int j = 1; j < n; ++j) {
      s.add(Step{.prim = Primitive::kReduce,
                 .src = contribution(j),
                 .dst = acc,
                 .count = c,
                 .postOp = postOp && j == n - 1});
    }
  }
}

}  // namespace trnccl::algorithms
