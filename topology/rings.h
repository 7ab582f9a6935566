// Rings (channels) of ranks that step only along physical links where the topology allows:
// the chip order comes from the torus (two edge-disjoint Hamiltonian cycles on a full 4x4,
// a row ring or snake on partly used instances), the cores of a chip are consecutive, and on
// a 3D torus every other instance runs the chip order backwards so that the step from one
// instance to the next is a Z link between same-coordinate chips.
#pragma once

#include <vector>

#include "topology/layout.h"
#include "topology/topology.h"

namespace trnccl::topology {

// Chip orders (local ids) for an instance of which the first `usedChips` chips hold ranks.
// Full square torus → the two rings of disjointTorusRings; full rows of a torus →
// torusRowsRing; anything else (switch, no fabric, odd shapes) → 0..usedChips-1, where every
// step goes through the switch or is not a single link.
std::vector<std::vector<int>> instanceChipRings(const Topology& topo, int usedChips);

// Ranks in ring order: instance by instance, chips in `chipOrder` (odd instances reversed
// when `reverseOddInstances`), cores of a chip consecutive. Places without a rank are skipped.
std::vector<int> rankRing(const Layout& layout, const std::vector<int>& chipOrder,
                          bool reverseOddInstances = false);

// One rank ring per channel for the job: instanceChipRings of the first instance's use.
std::vector<std::vector<int>> rankRings(const Topology& topo, const Layout& layout);

// Whether every step of the ring (including last → first) stays on a chip or crosses exactly
// one link (NeuronLink, switch port or the network between instances).
bool ringFollowsLinks(const Topology& topo, const Layout& layout, const std::vector<int>& ring);

}  // namespace trnccl::topology
