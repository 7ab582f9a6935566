// The library's cost per ring step beyond its bytes, and per call, for trnccl-sim-calibrate: runs
// trnccl-sim-calibrate-step (library_step.cc: N processes, the public API, the real shm
// transport; a step's time is told apart from the call's own cost by timing calls of one and of
// several steps) and fits the step times against their size with the simulator's own form of a
// message's time (docs/SIMULATOR.md, "This machine"):
//   t(S) = fixed + perByte * S          for S below the zero-copy size (copied twice),
//   t(S) = fixed + perByteInPlace * S   from it (read in place),
// one fixed cost for both, by least squares over the step program's sizes. The fixed cost is
// what every message pays beyond its bytes; the description carries it as the device's
// message_us (less the link's latency, which the simulator adds to every message too); the
// call's own cost is its call_us.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace trnccl::calibrate {

struct StepTime {
  size_t bytes = 0;
  double us = 0, lowUs = 0, highUs = 0;  // median, lowest, highest of the repetitions
};

struct StepFit {
  std::vector<StepTime> times;  // the step program's measurements
  double fixedUs = 0;           // per step, whatever its size
  double usPerKiB = 0;          // below the zero-copy size
  double usPerKiBInPlace = 0;   // from it
  StepTime call;                // the call's own cost (bytes 0): median, lowest, highest
};

// Runs the step program beside this executable (`self`: argv[0] or /proc/self/exe) with `ranks`
// processes and `repeat` runs, and fits its times; an error message instead if it failed.
bool measureStepCost(int ranks, int repeat, size_t zeroCopyBytes, StepFit& fit, std::string& error);

// The least-squares fit above of `times` (at least one size on each side of zeroCopyBytes).
bool fitStepCost(const std::vector<StepTime>& times, size_t zeroCopyBytes, StepFit& fit);

}  // namespace trnccl::calibrate
