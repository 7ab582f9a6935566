#include "common/report.h"

#include <fmt/format.h>
#include <fmt/printf.h>

namespace trnccl::perf {

Bandwidth bandwidth(size_t bytes, double seconds, double busFactor) {
  if (seconds <= 0) return {};
  const double algBw = double(bytes) / 1.0e9 / seconds;
  return {algBw, algBw * busFactor};
}

double allReduceBusFactor(int nranks) { return 2.0 * (nranks - 1) / nranks; }
double gatherBusFactor(int nranks) { return double(nranks - 1) / nranks; }
double unitBusFactor(int) { return 1.0; }

std::string formatFloat(double value, int width) {
  int digits = 0;  // digits before the decimal point
  for (double v = 1; value >= v; v *= 10) ++digits;
  if (digits < width - 2) return fmt::sprintf("%*.2f", width, value);
  if (digits < width - 1) return fmt::sprintf("%*.1f", width, value);
  if (digits < width + 1) return fmt::sprintf("%*.0f", width, value);
  return fmt::sprintf("%*.1e", width, value);
}

std::string headerLines() {
  std::string s = "#\n";
  s += fmt::sprintf(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
      "in-place          \n",
      "", "", "", "", "");
  s += fmt::sprintf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n",
                    "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                    "time", "algbw", "busbw", "#wrong");
  s += fmt::sprintf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "(B)",
                    "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                    "(GB/s)", "");
  return s;
}

std::string rowPrefix(size_t bytes, size_t count, std::string_view type, std::string_view op,
                      int root) {
  return fmt::sprintf("%12li  %12li  %8s  %6s  %6i", long(bytes), long(count), std::string(type),
                      std::string(op), root);
}

std::string rowBody(double timeUs, Bandwidth bw, bool checked, int64_t wrong) {
  const std::string t = formatFloat(timeUs, 7);
  const std::string a = formatFloat(bw.algBw, 6);
  const std::string b = formatFloat(bw.busBw, 6);
  if (!checked) return fmt::sprintf("  %7s  %6s  %6s    N/A", t, a, b);
  return fmt::sprintf("  %7s  %6s  %6s  %6g", t, a, b, double(wrong));
}

std::string rowBodyNotRun() {
  return fmt::sprintf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
}

std::string footerLines(int64_t errors, double avgBusBw, std::string_view program) {
  std::string s;
  s += fmt::sprintf("# %-20s : %d %s\n", "Out of bounds values", errors, errors ? "FAILED" : "OK");
  s += fmt::sprintf("# %-20s : %g %s\n", "Avg bus bandwidth", avgBusBw, "");
  s += "#\n";
  s += fmt::format("# Collective test concluded: {}\n", program);
  return s;
}

}  // namespace trnccl::perf
