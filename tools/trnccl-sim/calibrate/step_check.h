// Whether a run of the step program (step_cost.h) is consistent with the copy rate the same
// calibration measured, and the calibration's repetition of a run that is not (docs/SIMULATOR.md,
// eighteenth session).
//
// The step program has a slow mode on this machine (seventeenth session): its steps through the
// FIFO cost 4-5x more per KiB (2 ranks 0.54-0.56 us/KiB against 0.10-0.13, 4 ranks 1.05-1.06
// against 0.12-0.25) and its rounds read in place 3-4x more, in every repetition of a run, while
// the calibration's copy rates in the same run are as always. Set against two copies of a KiB at
// that calibration's own copy rate of its smallest working set (64 KiB: the FIFO's sender copies
// in and its receiver out), the FIFO's slope was 1.2-3.1 times that in the 24 kept calibrations
// of normal runs (2 and 4 ranks, sessions 15-17) and 12.8-14.1 times in the four slow ones; the
// least round read in place (32 KiB) 5.5-11.0 times one copy of its bytes, against 29.0-30.5. The
// bounds below sit between the two groups, about twice the normal highest. What the slow mode is:
// the eighteenth session's measurement in docs/SIMULATOR.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "step_cost.h"

namespace trnccl::calibrate {

// A run's FIFO slope is inconsistent above this many times two copies of a KiB at the copy rate.
inline constexpr double kMaxSlopeOverCopies = 6;
// Its least round read in place is inconsistent above this many times one copy of its bytes.
inline constexpr double kMaxInPlaceOverCopy = 20;
// Runs of the step program at most, the first included, and the seconds between two.
inline constexpr int kStepAttempts = 3;
inline constexpr int kStepPauseSeconds = 10;

struct StepVerdict {
  bool consistent = false;
  double slopeRatio = 0;    // the FIFO's us/KiB over two copies of a KiB at the copy rate
  double inPlaceRatio = 0;  // the least round read in place over one copy of zeroCopyBytes
  std::string why;          // what was out of bounds (empty when consistent)
  // How far out of bounds: the larger of the two ratios over its bound (<= 1 when consistent).
  double excess() const {
    return std::max(slopeRatio / kMaxSlopeOverCopies, inPlaceRatio / kMaxInPlaceOverCopy);
  }
};

// Judges a fit against `copyGBps`, the same calibration's copy rate of its smallest working set
// (GB/s per rank, all ranks at once); `zeroCopyBytes` is the size of the least round read in place.
inline StepVerdict judgeStep(const StepFit& fit, double copyGBps, size_t zeroCopyBytes) {
  StepVerdict v;
  if (copyGBps <= 0) {
    v.why = "no copy rate to judge the step against";
    return v;
  }
  const double kibCopyUs = 1024 / (copyGBps * 1e3);  // GB/s = bytes per ns
  v.slopeRatio = fit.usPerKiB / (2 * kibCopyUs);
  v.inPlaceRatio = fit.inPlaceUs / (static_cast<double>(zeroCopyBytes) / 1024 * kibCopyUs);
  char text[160];
  if (v.slopeRatio > kMaxSlopeOverCopies) {
    std::snprintf(text, sizeof text,
                  "FIFO %.4f us/KiB is %.1fx two copies at %.2f GB/s (bound %.0fx)", fit.usPerKiB,
                  v.slopeRatio, copyGBps, kMaxSlopeOverCopies);
    v.why = text;
  }
  if (v.inPlaceRatio > kMaxInPlaceOverCopy) {
    std::snprintf(text, sizeof text, "in place %.2f us is %.1fx a copy of %zu B (bound %.0fx)",
                  fit.inPlaceUs, v.inPlaceRatio, zeroCopyBytes, kMaxInPlaceOverCopy);
    v.why += (v.why.empty() ? "" : "; ") + std::string(text);
  }
  v.consistent = v.why.empty();
  return v;
}

struct StepChoice {
  StepFit fit;                        // the run kept
  int kept = 0;                       // its attempt, from 1
  std::vector<StepVerdict> verdicts;  // every attempt's, in order
  bool consistent() const { return kept > 0 && verdicts[kept - 1].consistent; }
};

// Runs `measure` (one run of the step program and its fit; false and an error if it failed)
// until `judge` finds a run consistent, at most `attempts` times; keeps the first consistent
// run, or, when none is, the one least out of bounds (StepVerdict::excess). False if a run
// failed. `seen` (if set) is told each attempt as it ends.
inline bool chooseStep(
    int attempts, const std::function<bool(StepFit&, std::string&)>& measure,
    const std::function<StepVerdict(const StepFit&)>& judge, StepChoice& choice, std::string& error,
    const std::function<void(int, const StepFit&, const StepVerdict&)>& seen = nullptr) {
  choice = StepChoice{};
  for (int a = 1; a <= attempts; ++a) {
    StepFit fit;
    if (!measure(fit, error)) return false;
    choice.verdicts.push_back(judge(fit));
    const StepVerdict& v = choice.verdicts.back();
    if (seen) seen(a, fit, v);
    if (choice.kept == 0 || v.excess() < choice.verdicts[choice.kept - 1].excess()) {
      choice.fit = fit;
      choice.kept = a;
    }
    if (v.consistent) {
      choice.fit = fit;
      choice.kept = a;
      return true;
    }
  }
  return true;
}

// Which attempt was kept and why, for the description's comment and the tool's output.
inline std::string describeChoice(const StepChoice& c) {
  const int n = static_cast<int>(c.verdicts.size());
  std::string out = "attempt " + std::to_string(c.kept) + " of " + std::to_string(n) + " kept";
  if (!c.consistent() && c.kept > 0) {
    out += ", the least out of bounds: none was consistent with the copy rate";
  }
  for (int a = 1; a <= n; ++a) {
    const StepVerdict& v = c.verdicts[a - 1];
    if (!v.consistent) out += "; attempt " + std::to_string(a) + ": " + v.why;
  }
  return out;
}

// One attempt's line: its ratios and, per repetition of the step program, what machine_probe.h
// saw (the cache line's one-way time between the CPUs before/after, us; steal and iowait jiffies).
inline std::string describeAttempt(int attempt, const StepFit& fit, const StepVerdict& v) {
  char text[200];
  std::snprintf(text, sizeof text,
                "step program attempt %d: %s (FIFO slope %.1fx two copies, in place %.1fx a copy)",
                attempt, v.consistent ? "consistent" : "INCONSISTENT", v.slopeRatio,
                v.inPlaceRatio);
  std::string out = text;
  for (const StepRun& r : fit.runs) {
    std::snprintf(text, sizeof text,
                  "\n  run: %.1f s, CPU-to-CPU line %.3f/%.3f us, steal %llu, "
                  "iowait %llu, idle %llu of %llu jiffies",
                  r.seconds, r.hopBeforeUs, r.hopAfterUs, r.steal, r.iowait, r.idle,
                  r.busy + r.idle + r.iowait + r.steal);
    out += text;
  }
  return out;
}

// The step program run by measureStepCost (step_cost.h) and chosen by chooseStep against
// judgeStep with `copyGBps`, each attempt printed as it ends (describeAttempt), the attempts after
// the first `pauseSeconds` after the one before (the slow mode's stretches in the eighteenth
// session's probe lasted 0-10 s; in the seventeenth, minutes); in step_cost.cc.
bool measureCheckedStep(int ranks, int repeat, size_t zeroCopyBytes, double copyGBps, int attempts,
                        int pauseSeconds, StepChoice& choice, std::string& error);

}  // namespace trnccl::calibrate
