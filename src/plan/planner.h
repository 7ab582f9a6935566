// The planner (tuner): for one call, the algorithm of the collective's table that supports the
// call, that TRNCCL_ALGO allows, and that the cost model (cost_model.h) estimates fastest on the
// modelled topology; then its schedule.
#pragma once

#include <string>

#include "algorithms/algorithm.h"
#include "common/status.h"

namespace trnccl::plan {

struct LinkModel;

// The chosen algorithm's name, channel count and estimate (µs; negative when the model had
// none).
struct Choice {
  const algorithms::Algorithm* algorithm = nullptr;
  double estimateUs = -1;
  int channels = 1;
};
Result<Choice> choose(const algorithms::CollArgs& args, const LinkModel& links);

// Channels for the ring algorithms: TRNCCL_NCHANNELS=k (k >= 1) forces min(k, usable rings);
// otherwise the count from 1 to the usable rings (algorithms::channelRings) that the cost
// model estimates fastest. 1 for every other algorithm.
int chooseChannels(const std::string& algorithm, const algorithms::CollArgs& args,
                   const LinkModel& links);

// Plans with the chosen algorithm and channel count (written into the builder's CollArgs).
Result<schedule::Schedule> plan(const algorithms::CollArgs& args, const LinkModel& links);

// TRNCCL_ALGO in NCCL's syntax: "ring", "ring,tree", "^ring" (all but), and per collective
// "allreduce:ring;allgather:^ring". Whether `algo` may run for `coll`.
bool algoAllowed(const std::string& spec, const std::string& coll, const std::string& algo);

}  // namespace trnccl::plan
