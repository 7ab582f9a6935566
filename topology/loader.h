// Topology descriptions in YAML (schema: docs/TOPOLOGY.md), loaded with yaml-cpp. Errors name
// the file, the line and the field: "trn1.yaml:12: chips[3].links[0]: 'bandwidth_gbps' must be
// a positive number". dumpYaml writes a description that loads back equal, as NCCL's topology
// round-trips through NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "topology/topology.h"

namespace trnccl::topology {

// A path (contains '/' or ends in .yaml/.yml) loads that file; a name loads <name>.yaml from
// the directories of TRNCCL_TOPOLOGY_PATH (':'-separated), else the built-in description of
// that name, compiled into the library (topology/builtins.h).
Result<Topology> loadTopology(const std::string& nameOrPath);
Result<Topology> loadTopologyFile(const std::string& path);
// Parses YAML text; `source` names it in errors (a file name, or "<string>").
Result<Topology> parseTopology(const std::string& text, const std::string& source);

std::string dumpYaml(const Topology& topo);

// The directories of TRNCCL_TOPOLOGY_PATH, in order (searched before the built-ins).
std::vector<std::string> topologySearchPath();
// Names of the descriptions in those directories and of the built-ins (sorted, no duplicates).
std::vector<std::string> listTopologies();

}  // namespace trnccl::topology
