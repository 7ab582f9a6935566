#include "step_cost.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace trnccl::calibrate {

namespace {

// Solves the 3x3 system a x = b (Cramer's rule); false if it is singular.
bool solve3(const std::array<std::array<double, 3>, 3>& a, const std::array<double, 3>& b,
            std::array<double, 3>& x) {
  const auto det = [](const std::array<std::array<double, 3>, 3>& m) {
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
           m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  };
  const double d = det(a);
  if (std::abs(d) < 1e-300) return false;
  for (size_t c = 0; c < 3; ++c) {
    auto m = a;
    for (size_t r = 0; r < 3; ++r) m[r][c] = b[r];
    x[c] = det(m) / d;
  }
  return true;
}

}  // namespace

bool fitStepCost(const std::vector<StepTime>& times, size_t zeroCopyBytes, StepFit& fit) {
  // Columns: 1, KiB below the zero-copy size, KiB from it; normal equations.
  std::array<std::array<double, 3>, 3> ata{};
  std::array<double, 3> atb{};
  int below = 0, from = 0;
  for (const StepTime& t : times) {
    const double kib = static_cast<double>(t.bytes) / 1024;
    const bool inPlace = t.bytes >= zeroCopyBytes;
    (inPlace ? from : below) += 1;
    const std::array<double, 3> row = {1, inPlace ? 0 : kib, inPlace ? kib : 0};
    for (size_t i = 0; i < 3; ++i) {
      atb[i] += row[i] * t.us;
      for (size_t j = 0; j < 3; ++j) ata[i][j] += row[i] * row[j];
    }
  }
  std::array<double, 3> x{};
  if (below < 1 || from < 1 || below + from < 3 || !solve3(ata, atb, x)) return false;
  fit.times = times;
  fit.fixedUs = x[0];
  fit.usPerKiB = x[1];
  fit.usPerKiBInPlace = x[2];
  return true;
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
