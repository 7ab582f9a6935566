// What trnccl-sim prints and writes: nccl-tests' table (one column group per algorithm, #wrong
// replaced by the algorithm and channel count), JSON, and a gnuplot PNG of busbw against size.
#pragma once

#include <string>

#include "common/status.h"
#include "options.h"
#include "sweep.h"

namespace trnccl::simtool {

std::string table(const Options& o, const Sweep& sw);
Status writeJson(const Options& o, const Sweep& sw, const std::string& path);
Status writePlot(const Sweep& sw, const std::string& path);

// The tuner's pick's time over the fastest group's, minus one (0 when it is the fastest);
// negative when the row has no such pair (not --algo all, or the pick did not run).
double tunerExcess(const Sweep& sw, const Row& row);

}  // namespace trnccl::simtool
