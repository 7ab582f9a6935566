// The sections trnccl-topo prints, one function each, so a new section (the tuner's --tune,
// later) is one more function here and one more option in main.cc.
#pragma once

#include <string>

#include "common/status.h"
#include "topology/topology.h"

namespace trnccl::tools {

// Instances, chips, cores, HBM, fabric, links grouped by class and speed, network.
void printSummary(const topology::Topology& topo);
// One line per chip, neighbours in neuron-ls order: "device 0: 12 3 4 1".
void printNeighbors(const topology::Topology& topo);
// The layout of `nranks` ranks (TRNCCL_EMU_RANKS_PER_NODE applies), its ring channels and
// subgroups.
Status printRings(const topology::Topology& topo, int nranks);
// The tuner's choice and estimate per collective and size for nranks ranks.
Status printTuning(const std::string& nameOrPath, int nranks);
// The registry: per collective, each algorithm's name, whether it uses channels, description.
void printAlgorithms();
// Writes <base>.dot and, when Graphviz's `dot` is on PATH, renders <base>.png and <base>.svg.
Status drawTopology(const topology::Topology& topo, const std::string& base);

}  // namespace trnccl::tools
