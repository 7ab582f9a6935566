// The cost model's vocabulary: what the links between a communicator's ranks cost on the
// modelled hardware (the topology description, not the emulation host), and the phase formulas
// the algorithms' estimates (Algorithm::estimate) are written in. One model: the tuner
// (plan/planner.cc) compares the estimates, and anything else that times schedules on the
// modelled links reads the same LinkModel and the same estimates.
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

// What the model knows of the links between this communicator's ranks (filled from the
// topology description by plan::describeTopology).
struct LinkModel {
  double intraLatencyUs = 1.5;   // one NeuronLink hop
  double intraBandwidth = 96;    // GB/s per neighbour link
  double interLatencyUs = 15;    // across instances: EFA, HBM to HBM (or an UltraServer's fabric)
  double interBandwidth = 12.5;  // GB/s per rank when all cross (instance EFA / its ranks)
  double meshHops = 1;           // average hops of a direct transfer (1 on a switch)
  bool multiInstance = false;    // ranks span instances
};

// One class of link: latency per transfer, and bandwidth in GB/s (= 1e3 bytes per us).
struct LinkCost {
  double latencyUs;
  double bandwidth;
};

LinkCost intraLink(const LinkModel& m);  // within an instance
LinkCost interLink(const LinkModel& m);  // across instances, per rank
// The slowest link an algorithm that ignores the instance boundary crosses.
LinkCost flatLink(const LinkModel& m);

// Bytes of the whole buffer S, as nccl-tests counts it (the per-rank count times nranks for
// all-gather, reduce-scatter and all-to-all).
double totalBytes(const CollArgs& a);

// One ring phase (a reduce-scatter or an all-gather) over k members: (k-1) steps of bytes / k.
double ringPhase(int k, double bytes, LinkCost link);

// One phase of n-1 steps of S/n over the flat link, all ranks in a ring: the model's figure for
// the chains and the pairwise exchange.
double flatPhase(const CollArgs& a, const LinkModel& m);

// One phase of the flat ring over all ranks on args.channels rings at once, each on its own part
// (S / channels) and its own directed links (channelRings guarantees no two share one; links
// are full duplex and the description's bandwidth is per direction), each extra concurrent
// message costing a little per step. Across instances the EFA share per rank is the
// bottleneck, which more rings don't widen.
double flatRingPhase(const CollArgs& a, const LinkModel& m);

}  // namespace trnccl::algorithms
