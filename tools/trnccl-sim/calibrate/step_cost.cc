#include "step_cost.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "step_check.h"

namespace trnccl::calibrate {

bool fitStepCost(const std::vector<StepTime>& times, size_t zeroCopyBytes, StepFit& fit) {
  // Through the FIFO: least squares of t = fixed + perKiB * KiB.
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::vector<double> inPlace;
  for (const StepTime& t : times) {
    if (t.bytes >= zeroCopyBytes) {
      inPlace.push_back(t.us);
      continue;
    }
    const double kib = static_cast<double>(t.bytes) / 1024;
    n += 1;
    sx += kib;
    sy += t.us;
    sxx += kib * kib;
    sxy += kib * t.us;
  }
  const double det = n * sxx - sx * sx;
  if (n < 2 || inPlace.empty() || std::abs(det) < 1e-12) return false;
  fit.times = times;
  fit.usPerKiB = (n * sxy - sx * sy) / det;
  fit.fixedUs = (sy - fit.usPerKiB * sx) / n;
  // Read in place: the least round. The floor is what the least message read in place takes;
  // a larger one takes its bytes' time if that is more (sim/engine.h), and here one more cost
  // that the ring's forwards do not pay (step_cost.h): the median round put it on every message.
  fit.inPlaceUs = *std::min_element(inPlace.begin(), inPlace.end());
  fit.freshUs = std::max(0.0, fit.inPlaceUs - fit.fixedUs);
  return true;
}

double linkLatencyUs(const StepFit& fit, double hopUs) {
  return std::min(hopUs, std::max(0.0, fit.fixedUs));
}

double messageUs(const StepFit& fit, double hopUs) {
  return std::max(0.0, fit.fixedUs - linkLatencyUs(fit, hopUs));
}

double callUs(const StepFit& fit) { return std::max(0.0, fit.call.us); }

std::string stepList(const StepFit& fit) {
  std::string out;
  for (const auto& t : fit.times) out += fmt::format(" {} B {:.2f},", t.bytes, t.us);
  if (!out.empty()) out.pop_back();
  return out;
}

bool measureStepCost(int ranks, int repeat, size_t zeroCopyBytes, StepFit& fit,
                     std::string& error) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    error = "cannot find this program's directory: " + ec.message();
    return false;
  }
  const std::string command =
      fmt::format("'{}' --ranks {} --repeat {}",
                  (self.parent_path() / "trnccl-sim-calibrate-step").string(), ranks, repeat);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    error = "cannot run " + command;
    return false;
  }
  std::vector<StepTime> times;
  StepTime t;
  while (std::fscanf(pipe, "%zu %lf %lf %lf", &t.bytes, &t.us, &t.lowUs, &t.highUs) == 4) {
    times.push_back(t);
  }
  StepTime call;
  const bool gotCall =
      std::fscanf(pipe, " call %lf %lf %lf", &call.us, &call.lowUs, &call.highUs) == 3;
  StepTime host;  // older step programs print no host line
  if (std::fscanf(pipe, " host %lf %lf %lf", &host.us, &host.lowUs, &host.highUs) != 3) {
    host = StepTime{};
  }
  std::vector<StepRun> runs;
  char line[1024];
  std::vector<double> copies;
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    const std::string text(line);
    if (text.rfind("copies ", 0) == 0) {
      const char* p = text.c_str() + 6;
      double v = 0;
      int used = 0;
      while (std::sscanf(p, " %lf%n", &v, &used) == 1) {
        copies.push_back(v);
        p += used;
      }
      continue;
    }
    const size_t hop = text.find(" hop ");
    if (text.rfind("rep ", 0) != 0 || hop == std::string::npos) continue;
    StepRun r;
    r.line = text.substr(4, text.find_last_not_of('\n') - 3);
    if (std::sscanf(text.c_str() + hop,
                    " hop %lf %lf seconds %lf busy %llu idle %llu iowait %llu steal %llu nvcsw "
                    "%ld nivcsw %ld minflt %ld",
                    &r.hopBeforeUs, &r.hopAfterUs, &r.seconds, &r.busy, &r.idle, &r.iowait,
                    &r.steal, &r.nvcsw, &r.nivcsw, &r.minflt) == 10) {
      runs.push_back(r);
    }
  }
  if (pclose(pipe) != 0 || times.empty() || !gotCall) {
    error = command + " failed";
    return false;
  }
  if (!fitStepCost(times, zeroCopyBytes, fit)) {
    error = "the step times do not determine a fit (sizes on both sides of the zero-copy size)";
    return false;
  }
  fit.call = call;
  fit.host = host;
  fit.runs = runs;
  fit.copyUs = copies.size() == fit.times.size() ? copies : std::vector<double>{};
  return true;
}

bool measureCheckedStep(int ranks, int repeat, size_t zeroCopyBytes, int attempts, int pauseSeconds,
                        StepChoice& choice, std::string& error) {
  int runs = 0;
  return chooseStep(
      attempts,
      [&](StepFit& f, std::string& e) {
        if (runs++ > 0 && pauseSeconds > 0) sleep(static_cast<unsigned>(pauseSeconds));
        return measureStepCost(ranks, repeat, zeroCopyBytes, f, e);
      },
      [&](const StepFit& f) { return judgeStep(f, zeroCopyBytes); }, choice, error,
      [](int a, const StepFit& f, const StepVerdict& v) {
        std::printf("%s\n", describeAttempt(a, f, v).c_str());
        std::fflush(stdout);
      });
}

}  // namespace trnccl::calibrate
