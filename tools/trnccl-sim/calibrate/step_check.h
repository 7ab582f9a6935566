// Whether a run of the step program (step_cost.h) is consistent with the copies it timed
// alone, and the calibration's repetition of a run that is not (docs/SIMULATOR.md, eighteenth
// session).
//
// The step program has a slow mode on this machine: its steps through the FIFO cost 4-5x more per
// KiB and its rounds read in place 3-4x more, for seconds to minutes, while a process's copies of
// its own buffers are as always. It is the hypervisor running the two vCPUs on cores far apart (a
// cache line between them 0.14-0.19 us instead of 0.03: machine_probe.h). So a run is judged
// against the copies the step program times alone in the same processes (a rewrite of a round's
// bytes, the least over its repetitions; library_step.cc): the FIFO's slope against two copies of
// a KiB (the sender's in, the receiver's out) at the rate of the largest FIFO size's copy, and the
// least size read in place's round against one copy of its bytes. In the eighteenth session's
// quiet probe (96 runs of 3 repetitions at each of 2 and 4 ranks, step medians, grouped by the
// cache line's time before and after each repetition) the usual runs gave 1.1-4.5x and 6.0-15.7x,
// the slow ones 9.3-19.0x and 29.0-48.1x. The bounds below sit between the two groups. (Against
// the calibration's 64 KiB copy band, as first tried, a 4-rank run's ratios moved 2x with that
// band, which is bimodal at 4 ranks, 25 or 48 GB/s; so is the median copy: the least is not.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "step_cost.h"

namespace trnccl::calibrate {

// A run's FIFO slope is inconsistent above this many times two copies of a KiB.
inline constexpr double kMaxSlopeOverCopies = 6;
// Its least round read in place is inconsistent above this many times one copy of its bytes.
inline constexpr double kMaxInPlaceOverCopy = 20;
// Runs of the step program at most, the first included, and the seconds between two.
inline constexpr int kStepAttempts = 3;
inline constexpr int kStepPauseSeconds = 10;

struct StepVerdict {
  bool consistent = false;
  double slopeRatio = 0;    // the FIFO's us/KiB over two copies of a KiB
  double inPlaceRatio = 0;  // the least size read in place: its round over its copy
  std::string why;          // what was out of bounds (empty when consistent)
  // How far out of bounds: the larger of the two ratios over its bound (<= 1 when consistent).
  double excess() const {
    return std::max(slopeRatio / kMaxSlopeOverCopies, inPlaceRatio / kMaxInPlaceOverCopy);
  }
};

// Judges a fit against its own copies (fit.copyUs); `zeroCopyBytes` is the least size read in
// place. Without copy times (or without a size on either side) nothing can be judged: inconsistent.
inline StepVerdict judgeStep(const StepFit& fit, size_t zeroCopyBytes) {
  StepVerdict v;
  const StepTime* fifo = nullptr;     // the largest size through the FIFO
  const StepTime* inPlace = nullptr;  // the least size read in place
  double fifoCopy = 0, inPlaceCopy = 0;
  for (size_t i = 0; i < fit.times.size() && fit.copyUs.size() == fit.times.size(); ++i) {
    const StepTime& t = fit.times[i];
    if (t.bytes < zeroCopyBytes && (fifo == nullptr || t.bytes > fifo->bytes)) {
      fifo = &t;
      fifoCopy = fit.copyUs[i];
    } else if (t.bytes >= zeroCopyBytes && (inPlace == nullptr || t.bytes < inPlace->bytes)) {
      inPlace = &t;
      inPlaceCopy = fit.copyUs[i];
    }
  }
  if (fifo == nullptr || inPlace == nullptr || fifoCopy <= 0 || inPlaceCopy <= 0) {
    v.why = "no copy times to judge the step against";
    return v;
  }
  const double kibCopyUs = fifoCopy / (static_cast<double>(fifo->bytes) / 1024);
  v.slopeRatio = fit.usPerKiB / (2 * kibCopyUs);
  v.inPlaceRatio = inPlace->us / inPlaceCopy;
  char text[160];
  if (v.slopeRatio > kMaxSlopeOverCopies) {
    std::snprintf(text, sizeof text,
                  "FIFO %.4f us/KiB is %.1fx two copies of a KiB (%.4f us; bound %.0fx)",
                  fit.usPerKiB, v.slopeRatio, kibCopyUs, kMaxSlopeOverCopies);
    v.why = text;
  }
  if (v.inPlaceRatio > kMaxInPlaceOverCopy) {
    std::snprintf(text, sizeof text,
                  "%zu B in place %.2f us is %.1fx its copy (%.3f us; bound %.0fx)", inPlace->bytes,
                  inPlace->us, v.inPlaceRatio, inPlaceCopy, kMaxInPlaceOverCopy);
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
// judgeStep, each attempt printed as it ends (describeAttempt), the attempts after the first
// `pauseSeconds` after the one before (the slow mode's stretches in the eighteenth session's
// probes lasted 0-10 s; in the seventeenth, minutes); in step_cost.cc.
bool measureCheckedStep(int ranks, int repeat, size_t zeroCopyBytes, int attempts, int pauseSeconds,
                        StepChoice& choice, std::string& error);

}  // namespace trnccl::calibrate
