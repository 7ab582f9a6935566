// The ranks of a job as a box of coordinates along the fabric's dimensions, for the algorithms
// that compose sub-collectives along each of them:
//   torus3d: (core, X, Y, Z) — the cores of a chip, the torus columns and rows of the chips each
//            instance uses, and the instances along the Z rings;
//   switch:  (core, chip, server) — the cores of a chip, the chips of a server (an instance),
//            and the servers of the UltraServer.
// Every line of the box (the ranks differing in one coordinate) is the same set of places in
// every instance.
#pragma once

#include <optional>
#include <vector>

#include "topology/layout.h"
#include "topology/topology.h"

namespace trnccl::topology {

struct RankBox {
  std::vector<int> sizes;  // extent along each dimension (1 when unused)
  std::vector<int> ranks;  // ranks[c0 + sizes[0] * (c1 + sizes[1] * (c2 + ...))]
};

// The box of a job on a torus3d or switch description: every instance of one copy of the
// description holds the same places — whole chips (or part of one chip), which on a torus fill
// full torus rows or a prefix of the first row. nullopt otherwise (another fabric, a partly
// filled last instance or chip, instances beyond one copy, chips that make no rectangle).
std::optional<RankBox> rankBox(const Topology& topo, const Layout& layout);

}  // namespace trnccl::topology
