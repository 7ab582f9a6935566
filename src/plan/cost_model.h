// The tuner's cost model: time of one algorithm for one call on the modelled hardware (the
// topology description), not on the emulation host. Per step: the link class's latency plus
// bytes / bandwidth, with direct (mesh) traffic slowed by the hops it shares on a torus.
#pragma once

#include <optional>
#include <string>

#include "algorithms/algorithm.h"

namespace trnccl::plan {

// What the model knows of the links between this communicator's ranks.
struct LinkModel {
  double intraLatencyUs = 1.5;   // one NeuronLink hop
  double intraBandwidth = 96;    // GB/s per neighbour link
  double interLatencyUs = 15;    // EFA, HBM to HBM
  double interBandwidth = 12.5;  // GB/s per rank (instance EFA / ranks per instance)
  double meshHops = 1;           // average hops of a direct transfer (1 on a switch)
  bool multiInstance = false;    // ranks span instances
};

// Estimated microseconds, or nullopt when the model has no formula for the pair. The ring's
// estimate depends on args.channels (concurrent rings, each with its own links).
std::optional<double> estimateUs(const std::string& algorithm, const algorithms::CollArgs& args,
                                 const LinkModel& links);

}  // namespace trnccl::plan
