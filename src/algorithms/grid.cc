#include <algorithm>

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

bool Grid::usable(int nranks) const {
  if (numRows() < 2 || numCols() < 2 || numRows() * numCols() != nranks) return false;
  std::vector<bool> seen(nranks, false);
  for (const auto& row : rows) {
    if (static_cast<int>(row.size()) != numCols()) return false;
    for (int r : row) {
      if (r < 0 || r >= nranks || seen[r]) return false;
      seen[r] = true;
    }
  }
  return true;
}

std::pair<int, int> Grid::find(int rank) const {
  for (int i = 0; i < numRows(); ++i) {
    auto it = std::find(rows[i].begin(), rows[i].end(), rank);
    if (it != rows[i].end()) return {i, static_cast<int>(it - rows[i].begin())};
  }
  return {-1, -1};
}

std::vector<int> Grid::column(int j) const {
  std::vector<int> col;
  for (const auto& row : rows) col.push_back(row[j]);
  return col;
}

}  // namespace trnccl::algorithms
