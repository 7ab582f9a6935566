// The planner (tuner): for one call, the algorithm of the collective's registry that supports
// the call, that TRNCCL_ALGO allows, and whose estimate (algorithms/cost.h) is the smallest on
// the modelled topology; then its schedule. Everything it knows of an algorithm comes from its
// descriptor (algorithms::Algorithm).
#pragma once

#include <string>

#include "algorithms/algorithm.h"
#include "algorithms/cost.h"
#include "common/status.h"
#include "plan/overrides.h"

namespace trnccl::plan {

// The chosen algorithm, its channel count and its estimate (µs).
struct Choice {
  const algorithms::Algorithm* algorithm = nullptr;
  double estimateUs = -1;
  int channels = 1;
};
// `overrides`: a communicator's (read at its init); tools default to the environment's now.
Result<Choice> choose(const algorithms::CollArgs& args, const algorithms::LinkModel& links,
                      const Overrides& overrides = Overrides::fromEnvironment());

// Channels for an algorithm that uses them (Algorithm::usesChannels): `forced` = k >= 1
// (TRNCCL_NCHANNELS) forces min(k, usable rings); otherwise the count from 1 to the usable
// rings (algorithms::channelRings) that its estimate finds fastest. 1 for every other algorithm.
int chooseChannels(const algorithms::Algorithm& algorithm, const algorithms::CollArgs& args,
                   const algorithms::LinkModel& links,
                   int forced = Overrides::fromEnvironment().channels);

// Plans with the chosen algorithm and channel count (written into the builder's CollArgs).
Result<schedule::Schedule> plan(const algorithms::CollArgs& args,
                                const algorithms::LinkModel& links, const Overrides& overrides);

// TRNCCL_ALGO in NCCL's syntax: "ring", "ring,tree", "^ring" (all but), and per collective
// "allreduce:ring;allgather:^ring". Whether `algo` may run for `coll`.
bool algoAllowed(const std::string& spec, const std::string& coll, const std::string& algo);

}  // namespace trnccl::plan
