#include "topology/torus.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>

namespace trnccl::topology {

std::array<int, 4> torusNeighbors(int device, int rows, int cols) {
  int r = device / cols;
  int c = device % cols;
  return {cols * wrap(r - 1, rows) + c, cols * r + wrap(c - 1, cols), cols * wrap(r + 1, rows) + c,
          cols * r + wrap(c + 1, cols)};
}

bool areTorusNeighbors(int a, int b, int rows, int cols) {
  if (a == b) return false;
  auto n = torusNeighbors(a, rows, cols);
  return std::find(n.begin(), n.end(), b) != n.end();
}

int ringDistance(int a, int b, int n) {
  int d = std::abs(a - b) % n;
  return std::min(d, n - d);
}

int torusDistance(int a, int b, int rows, int cols) {
  return ringDistance(a / cols, b / cols, rows) + ringDistance(a % cols, b % cols, cols);
}

namespace {

using Edge = std::pair<int, int>;
Edge edge(int a, int b) { return {std::min(a, b), std::max(a, b)}; }

// The staircase cycle described in torus.h.
std::vector<int> staircase(int n) {
  std::vector<int> ring;
  int r = 0, c = 0;
  for (int row = 0; row < n; ++row) {
    for (int step = 0; step < n; ++step) {
      ring.push_back(n * r + c);
      if (step + 1 < n) c = wrap(c + 1, n);
    }
    r = wrap(r + 1, n);  // down from the row's last chip; the next row starts one column left
  }
  return ring;
}

// Walks the links of an n x n torus that `used` does not contain, from device 0. Each device
// has exactly two of them when `used` is a Hamiltonian cycle, so the walk is a cycle.
std::vector<int> complementCycle(const std::set<Edge>& used, int n) {
  std::vector<int> ring{0};
  int prev = -1, cur = 0;
  while (true) {
    int next = -1;
    for (int peer : torusNeighbors(cur, n, n)) {
      if (peer != prev && !used.contains(edge(cur, peer))) {
        next = peer;
        break;
      }
    }
    if (next == 0 || next < 0) break;
    ring.push_back(next);
    prev = cur;
    cur = next;
  }
  return ring;
}

}  // namespace

Result<std::array<std::vector<int>, 2>> disjointTorusRings(int rows, int cols) {
  if (rows != cols || rows < 3) {
    return invalidArgument(
        "two edge-disjoint rings are built for an n x n torus with n >= 3, "
        "not {} x {}",
        rows, cols);
  }
  std::vector<int> first = staircase(rows);
  std::set<Edge> used;
  for (size_t i = 0; i < first.size(); ++i) {
    used.insert(edge(first[i], first[(i + 1) % first.size()]));
  }
  std::vector<int> second = complementCycle(used, rows);
  if (second.size() != first.size()) {
    return internalError("torus {0}x{0}: the complement of the staircase is not one cycle", rows);
  }
  return std::array<std::vector<int>, 2>{std::move(first), std::move(second)};
}

std::vector<int> torusRowsRing(int usedRows, int rows, int cols) {
  std::vector<int> ring;
  if (usedRows < 1 || usedRows > rows) return ring;
  if (usedRows == 1) {
    for (int c = 0; c < cols; ++c) ring.push_back(c);
    return ring;
  }
  if (usedRows % 2 != 0) return ring;
  for (int c = 0; c < cols; ++c) ring.push_back(c);
  for (int r = 1; r < usedRows; ++r) {
    bool leftward = (r % 2) == 1;
    for (int i = 0; i < cols - 1; ++i) ring.push_back(cols * r + (leftward ? cols - 1 - i : 1 + i));
  }
  for (int r = usedRows - 1; r >= 1; --r) ring.push_back(cols * r);
  return ring;
}

}  // namespace trnccl::topology
