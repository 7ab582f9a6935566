#include "step_cost.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

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
  // Read in place: the median round (they take about the same time whatever their size).
  std::sort(inPlace.begin(), inPlace.end());
  const size_t m = inPlace.size();
  fit.inPlaceUs = m % 2 ? inPlace[m / 2] : (inPlace[m / 2 - 1] + inPlace[m / 2]) / 2;
  fit.freshUs = std::max(0.0, fit.inPlaceUs - fit.fixedUs);
  return true;
}

double linkLatencyUs(const StepFit& fit, double hopUs) {
  return std::min(hopUs, std::max(0.0, fit.fixedUs));
}

double messageUs(const StepFit& fit, double hopUs) {
  return std::max(0.0, fit.fixedUs - linkLatencyUs(fit, hopUs));
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
  if (pclose(pipe) != 0 || times.empty() || !gotCall) {
    error = command + " failed";
    return false;
  }
  if (!fitStepCost(times, zeroCopyBytes, fit)) {
    error = "the step times do not determine a fit (sizes on both sides of the zero-copy size)";
    return false;
  }
  fit.call = call;
  return true;
}

}  // namespace trnccl::calibrate
