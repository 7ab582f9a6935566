// The sizes × algorithms a trnccl-sim run simulates, and what each call gave.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"
#include "options.h"
#include "sim/simulate.h"

namespace trnccl::simtool {

// One algorithm's call at one size.
struct Cell {
  bool ran = false;       // false: the algorithm declines the call
  std::string algorithm;  // the one that ran (the tuner's pick in a "tuner" group)
  int channels = 1;
  double timeUs = 0;            // simulated
  double estimateUs = 0;        // the tuner's cost model
  double algBw = 0, busBw = 0;  // GB/s
};

struct Row {
  size_t bytes = 0;         // nccl-tests' size column: the larger buffer
  size_t count = 0;         // the call's count argument
  std::vector<Cell> cells;  // one per group
  std::string tunerPick;    // the tuner's algorithm (and channels), e.g. "ringx2"
  int bestGroup = -1;       // the group that ran fastest (--algo all)
};

struct Sweep {
  std::string title;                // topology, instances, ranks, collective, type, op
  std::vector<std::string> groups;  // "tuner", an algorithm's name, or every algorithm's
  std::vector<Row> rows;
  int nranks = 0;
  uint64_t steps = 0;      // simulated, over every call
  double wallSeconds = 0;  // spent simulating
};

// Everything a run needs, made once: the description placed on the ranks and its fabric.
struct Setup {
  sim::Simulator simulator;
  std::string coll;  // as --coll names it
};
Result<Setup> prepare(const Options& o);

Result<Sweep> runSweep(const Options& o, const Setup& setup);

// "ring", or "ringx2" with more than one channel (as trnccl-topo --tune prints it).
std::string withChannels(const std::string& algorithm, int channels);

// Simulates the largest size of the sweep once more with a recorder and writes the trace.
Status writeTrace(const Options& o, const Setup& setup);

}  // namespace trnccl::simtool
