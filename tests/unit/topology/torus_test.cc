// Torus neighbours against neuron-ls (DESIGN.md "Topology facts") and an independent formula;
// the two edge-disjoint Hamiltonian rings; the row ring / snake for partly used instances.
#include "topology/torus.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace trnccl::topology {
namespace {

// Written from the coordinates rather than the library's wrap(): (x + 3) % 4 is x - 1 mod 4.
std::array<int, 4> expectedNeighbors4x4(int d) {
  int r = d / 4, c = d % 4;
  return {4 * ((r + 3) % 4) + c, 4 * r + (c + 3) % 4, 4 * ((r + 1) % 4) + c, 4 * r + (c + 1) % 4};
}

TEST(TorusNeighbors, MatchesNeuronLsExamples) {
  EXPECT_EQ(torusNeighbors(0, 4, 4), (std::array<int, 4>{12, 3, 4, 1}));
  EXPECT_EQ(torusNeighbors(5, 4, 4), (std::array<int, 4>{1, 4, 9, 6}));
}

TEST(TorusNeighbors, FullTableMatchesIndependentFormula) {
  for (int d = 0; d < 16; ++d) {
    EXPECT_EQ(torusNeighbors(d, 4, 4), expectedNeighbors4x4(d)) << "device " << d;
  }
}

TEST(TorusNeighbors, FullTableAsListed) {
  // The neuron-ls --topology table for a 4x4 torus, written out.
  const std::array<std::array<int, 4>, 16> table{{{12, 3, 4, 1},
                                                  {13, 0, 5, 2},
                                                  {14, 1, 6, 3},
                                                  {15, 2, 7, 0},
                                                  {0, 7, 8, 5},
                                                  {1, 4, 9, 6},
                                                  {2, 5, 10, 7},
                                                  {3, 6, 11, 4},
                                                  {4, 11, 12, 9},
                                                  {5, 8, 13, 10},
                                                  {6, 9, 14, 11},
                                                  {7, 10, 15, 8},
                                                  {8, 15, 0, 13},
                                                  {9, 12, 1, 14},
                                                  {10, 13, 2, 15},
                                                  {11, 14, 3, 12}}};
  for (int d = 0; d < 16; ++d) EXPECT_EQ(torusNeighbors(d, 4, 4), table[d]) << "device " << d;
}

TEST(TorusNeighbors, SymmetricAndDistance) {
  for (int a = 0; a < 16; ++a) {
    for (int b : torusNeighbors(a, 4, 4)) {
      EXPECT_TRUE(areTorusNeighbors(b, a, 4, 4));
      EXPECT_EQ(torusDistance(a, b, 4, 4), 1);
    }
  }
  EXPECT_EQ(torusDistance(0, 10, 4, 4), 4);  // (0,0) → (2,2)
  EXPECT_EQ(torusDistance(0, 15, 4, 4), 2);  // wraps both ways
  EXPECT_FALSE(areTorusNeighbors(0, 5, 4, 4));
}

void expectHamiltonianOnTorus(const std::vector<int>& ring, int n) {
  ASSERT_EQ(ring.size(), static_cast<size_t>(n * n));
  EXPECT_EQ(std::set<int>(ring.begin(), ring.end()).size(), ring.size()) << "visits a chip twice";
  for (size_t i = 0; i < ring.size(); ++i) {
    int a = ring[i], b = ring[(i + 1) % ring.size()];
    EXPECT_TRUE(areTorusNeighbors(a, b, n, n)) << a << " -> " << b << " is not a link";
  }
}

std::set<std::pair<int, int>> edgesOf(const std::vector<int>& ring) {
  std::set<std::pair<int, int>> edges;
  for (size_t i = 0; i < ring.size(); ++i) {
    int a = ring[i], b = ring[(i + 1) % ring.size()];
    edges.insert({std::min(a, b), std::max(a, b)});
  }
  return edges;
}

TEST(DisjointTorusRings, TwoEdgeDisjointHamiltonianCyclesOn4x4) {
  auto rings = disjointTorusRings(4, 4);
  ASSERT_TRUE(rings) << rings.status().message();
  expectHamiltonianOnTorus((*rings)[0], 4);
  expectHamiltonianOnTorus((*rings)[1], 4);
  auto first = edgesOf((*rings)[0]);
  auto second = edgesOf((*rings)[1]);
  EXPECT_EQ(first.size(), 16u);
  EXPECT_EQ(second.size(), 16u);
  for (const auto& e : first) EXPECT_FALSE(second.contains(e)) << e.first << "-" << e.second;
}

TEST(DisjointTorusRings, OtherSquareSizes) {
  for (int n : {3, 5, 6, 8}) {
    auto rings = disjointTorusRings(n, n);
    ASSERT_TRUE(rings) << "n=" << n << ": " << rings.status().message();
    expectHamiltonianOnTorus((*rings)[0], n);
    expectHamiltonianOnTorus((*rings)[1], n);
    auto first = edgesOf((*rings)[0]);
    for (const auto& e : edgesOf((*rings)[1])) EXPECT_FALSE(first.contains(e)) << "n=" << n;
  }
}

TEST(DisjointTorusRings, RejectsShapesItCannotBuild) {
  EXPECT_FALSE(disjointTorusRings(2, 8));
  EXPECT_FALSE(disjointTorusRings(2, 2));
}

TEST(TorusRowsRing, OneRowUsesTheWrapLink) {
  EXPECT_EQ(torusRowsRing(1, 4, 4), (std::vector<int>{0, 1, 2, 3}));
}

TEST(TorusRowsRing, EvenRowsSnakeAlongLinks) {
  for (int used : {2, 4}) {
    auto ring = torusRowsRing(used, 4, 4);
    ASSERT_EQ(ring.size(), static_cast<size_t>(4 * used));
    EXPECT_EQ(std::set<int>(ring.begin(), ring.end()).size(), ring.size());
    for (size_t i = 0; i < ring.size(); ++i) {
      EXPECT_TRUE(areTorusNeighbors(ring[i], ring[(i + 1) % ring.size()], 4, 4));
      EXPECT_LT(ring[i], 4 * used);
    }
  }
  EXPECT_EQ(torusRowsRing(2, 4, 4), (std::vector<int>{0, 1, 2, 3, 7, 6, 5, 4}));
  EXPECT_TRUE(torusRowsRing(3, 4, 4).empty());
}

}  // namespace
}  // namespace trnccl::topology
