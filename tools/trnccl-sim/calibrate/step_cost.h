// The library's cost per ring step beyond its bytes, and per call, for trnccl-sim-calibrate: runs
// trnccl-sim-calibrate-step (library_step.cc: N processes, the public API, the real shm
// transport; a step's time is told apart from the call's own cost by timing calls of one and of
// several steps) and fits its step times with the simulator's own form of a message's time
// (docs/SIMULATOR.md, "This machine"), one fit per path of the transport:
//   - below the zero-copy size, through the FIFO: t(S) = fixed + perByte * S (least squares):
//     the fixed cost is what every message pays beyond its bytes; the description carries it
//     as the device's message_us plus the link's latency (the simulator adds both to every
//     message);
//   - from it, read in place: the step program's rounds send fresh data (rewritten before every
//     call, as a ring forwards what it has just reduced), and take about the same time from
//     32 to 128 KiB, far above the FIFO's line: the reader's cost of taking lines another core
//     has just written, which their bytes' own time does not reach. The least of those rounds
//     less the fixed cost is the device's in_place_fresh_us, a floor the simulator puts under
//     every message read in place whose bytes were written during the call (sim/engine.h).
// Until the fifteenth session one fixed cost was fitted over both paths, and the in-place
// rounds pulled it up: every FIFO message paid part of their cost (a 4-rank 64 KiB ring was
// predicted +46 to +93 %). Until the sixteenth the floor was the median round: the step
// program's 64 KiB round costs 8-10 us beyond the FIFO's fixed cost at 2 ranks where the 32 KiB
// one costs 5-6 and a ring's 32 or 64 KiB forward 4-7 (docs/SIMULATOR.md, "Sixteenth
// session"), so the median put a cost the forwards do not pay on each. The call's own cost is
// the description's call_us.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace trnccl::calibrate {

// A size's step time over the step program's repetitions: the median of those within twice the
// fastest. With 4 processes on 2 CPUs a repetition can fall into a slow mode, its steps from 32
// KiB ~1 us/KiB instead of ~0.2 (session 17: in most repetitions of one quiet calibration of
// the lead's, so its median was a slow one and the 4-rank prediction from 512 KiB +85 to +225 %);
// the model predicts the fast mode, as the benchmark's median mostly is. With no positive
// fastest (noise around 0 at small sizes) it is the plain median.
inline double fastModeMedian(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  if (v.front() > 0) {
    const double limit = 2 * v.front();
    v.erase(std::upper_bound(v.begin(), v.end(), limit), v.end());
  }
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct StepTime {
  size_t bytes = 0;
  double us = 0, lowUs = 0, highUs = 0;  // median, lowest, highest of the repetitions
};

// One repetition of the step program as its "rep" line tells it (library_step.cc,
// machine_probe.h): the cache line's one-way time between the two CPUs before and after, us; the
// repetition's wall time; the CPUs' jiffies during it; the step processes' context switches.
struct StepRun {
  double hopBeforeUs = 0, hopAfterUs = 0, seconds = 0;
  unsigned long long busy = 0, idle = 0, iowait = 0, steal = 0;
  long nvcsw = 0, nivcsw = 0, minflt = 0;
  std::string line;  // as printed, less "rep "
};

struct StepFit {
  std::vector<StepTime> times;  // the step program's measurements
  double fixedUs = 0;           // per step through the FIFO, whatever its size
  double usPerKiB = 0;          // through the FIFO (below the zero-copy size)
  double inPlaceUs = 0;         // a round read in place (from it): the least of their times
  double freshUs = 0;           // inPlaceUs less fixedUs (at least 0): in_place_fresh_us
  StepTime call;                // the call's own cost (bytes 0): median, lowest, highest
  StepTime host;  // what the step program took off each step for its host threads (bytes 0)
  std::vector<StepRun> runs;   // each repetition's (none from a step program before session 18)
  std::vector<double> copyUs;  // each size's copy alone, us, as `times` (empty: not printed)
};

// Runs the step program beside this executable (`self`: argv[0] or /proc/self/exe) with `ranks`
// processes and `repeat` runs, and fits its times; an error message instead if it failed.
bool measureStepCost(int ranks, int repeat, size_t zeroCopyBytes, StepFit& fit, std::string& error);

// The fits above of `times` (at least two sizes below zeroCopyBytes and one from it).
bool fitStepCost(const std::vector<StepTime>& times, size_t zeroCopyBytes, StepFit& fit);

// What the description's link and device carry of a fit and the token's hand-off (hopUs): the
// link's latency is the hand-off, but never more than the fixed cost of a whole step of the
// library, which includes a hand-off (with 4 processes on 2 cores the token's hop measured
// 2.3-5.7 us in one run, above the library's 2.1 us step); message_us is the rest of the fixed
// cost.
double linkLatencyUs(const StepFit& fit, double hopUs);
double messageUs(const StepFit& fit, double hopUs);

// What a call costs once, whatever its steps (negative in noise: none).
double callUs(const StepFit& fit);
// The step program's times, " BYTES B MEDIAN," each (the last comma left out).
std::string stepList(const StepFit& fit);

}  // namespace trnccl::calibrate
