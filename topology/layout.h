// Where each rank of a job runs: rank → (instance, chip, core). Ranks fill a chip's (logical)
// cores first, then the chips of an instance in neuron-ls order, then the next instance, so
// every k consecutive ranks share an instance, where k is the description's ranks per
// instance — or TRNCCL_EMU_RANKS_PER_NODE, which lets one host stand in for several instances
// (the same grouping src/comm/peer_info.cc applies to host hashes).
//
// A job may span more instances than the description has: instance i of the job is instance
// (i mod instances) of copy (i / instances) of the description, copies joined by the network.
#pragma once

#include <optional>
#include <vector>

#include "common/status.h"
#include "topology/topology.h"

namespace trnccl::topology {

struct RankPlace {
  int instance = 0;   // the job's instance
  int chip = 0;       // chip within the instance (neuron-ls device number)
  int core = 0;       // logical core within the chip
  int localRank = 0;  // rank within the instance
  bool operator==(const RankPlace&) const = default;
};

struct Layout {
  int nranks = 0;
  int ranksPerInstance = 0;
  int ranksPerChip = 0;
  int instances = 0;         // the job's instances (the last may be partly filled)
  int chipsPerInstance = 0;  // the description's
  int descInstances = 1;     // instances per copy of the description
  std::vector<RankPlace> places;

  const RankPlace& place(int rank) const { return places[static_cast<size_t>(rank)]; }
  // The rank at a place, or -1 when the job has none there.
  int rankAt(int instance, int chip, int core) const;
  // The chip's global id within its copy of the description, and which copy it is.
  int descChip(int rank) const;
  int descCopy(int rank) const { return place(rank).instance / descInstances; }
};

// ranksPerInstance 0 → the description's. Error when it exceeds what an instance holds or
// nranks < 1.
Result<Layout> makeLayout(const Topology& topo, int nranks, int ranksPerInstance = 0);

// How bytes travel between two ranks: same chip → on-chip; same copy of the description →
// routeBetween over its chips; different copies → the network. nullopt when not described.
std::optional<Route> routeBetweenRanks(const Topology& topo, const Layout& layout, int a, int b);

}  // namespace trnccl::topology
