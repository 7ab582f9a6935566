// Subgroups of a job's ranks that the hierarchical and torus algorithms compose
// sub-collectives on (UCC's topology subgroups). Pure functions of the description and the
// layout; every group lists ranks in ascending order of their place (instance, chip, core).
#pragma once

#include <vector>

#include "topology/layout.h"
#include "topology/topology.h"

namespace trnccl::topology {

using Group = std::vector<int>;

// The ranks of each instance of the job.
std::vector<Group> instanceGroups(const Layout& layout);
// The ranks of each chip of the job (per instance, per chip).
std::vector<Group> chipGroups(const Layout& layout);
// Rail i: the rank with local rank i in each instance (instances without one are skipped).
Group railGroup(const Layout& layout, int localRank);
// The EFA NIC each rank's chip sends through across instances (network.nic_of_chip), by rank:
// the rail it is on. The members of a rail group sit on the same chip of every instance, so
// they share a NIC index. Empty when the description has no network.
std::vector<int> rankNics(const Topology& topo, const Layout& layout);
// The instance leaders: rail 0.
inline Group leaderGroup(const Layout& layout) { return railGroup(layout, 0); }
// Rails 0..ranksPerInstance-1: one inter-instance group per local rank.
std::vector<Group> railGroups(const Layout& layout);

// Chips (local ids) of each torus row and column of an instance; empty when not a torus.
std::vector<std::vector<int>> torusRowChips(const Topology& topo);
std::vector<std::vector<int>> torusColumnChips(const Topology& topo);
// Ranks on each torus row / column of each instance, cores of a chip consecutive; rows and
// columns the job does not occupy are left out. Empty when the description is not a torus.
std::vector<Group> torusRowGroups(const Topology& topo, const Layout& layout);
std::vector<Group> torusColumnGroups(const Topology& topo, const Layout& layout);

// torus3d: for each local chip, the global ids of the same-coordinate chips of every instance
// (z = 0..instances-1), a ring through the Z links. Empty otherwise.
std::vector<std::vector<int>> zRingChips(const Topology& topo);
// torus3d: for each copy of the description, local chip and core, the ranks at that chip and
// core in the copy's instances — the Z step of a 3D algorithm. Empty otherwise.
std::vector<Group> zRingGroups(const Topology& topo, const Layout& layout);

}  // namespace trnccl::topology
