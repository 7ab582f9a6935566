#include <algorithm>

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

bool RankDims::covers(int nranks) const {
  size_t total = 1;
  for (const Dim& d : dims) {
    if (d.size < 1) return false;
    total *= static_cast<size_t>(d.size);
  }
  if (dims.empty() || total != ranks.size() || ranks.size() != static_cast<size_t>(nranks)) {
    return false;
  }
  std::vector<bool> seen(ranks.size(), false);
  for (int r : ranks) {
    if (r < 0 || r >= nranks || seen[r]) return false;
    seen[r] = true;
  }
  return true;
}

int RankDims::activeDims() const {
  return static_cast<int>(
      std::count_if(dims.begin(), dims.end(), [](const Dim& d) { return d.size > 1; }));
}

std::vector<int> RankDims::coords(int rank) const {
  auto it = std::find(ranks.begin(), ranks.end(), rank);
  if (it == ranks.end()) return {};
  size_t index = static_cast<size_t>(it - ranks.begin());
  std::vector<int> c;
  for (const Dim& d : dims) {
    c.push_back(static_cast<int>(index % d.size));
    index /= d.size;
  }
  return c;
}

std::vector<int> RankDims::line(int rank, int d) const {
  std::vector<int> c = coords(rank), out;
  if (c.empty()) return out;
  for (int x = 0; x < dims[d].size; ++x) {
    c[d] = x;
    size_t index = 0;
    for (size_t k = dims.size(); k-- > 0;) index = index * dims[k].size + c[k];
    out.push_back(ranks[index]);
  }
  return out;
}

RankDims RankDims::merged(int d) const {
  RankDims out = *this;
  const Dim &a = dims[d], &b = dims[d + 1];
  // A dimension of one coordinate has no links to cross (one server of a switch: its higher
  // tier is never used).
  if (a.size == 1 || b.size == 1) {
    out.dims[d] = b.size == 1 ? a : b;
    out.dims[d].size = a.size * b.size;
  } else {
    out.dims[d] = Dim{a.size * b.size, std::max(a.latencyUs, b.latencyUs),
                      std::min(a.bandwidth, b.bandwidth)};
  }
  out.dims.erase(out.dims.begin() + d + 1);
  return out;
}

}  // namespace trnccl::algorithms
