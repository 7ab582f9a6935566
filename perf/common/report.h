// Arithmetic and text of the nccl-tests report: bandwidths, number formatting, header, rows,
// footer. Pure functions returning strings, so the unit test needs no library and no devices.
//
// Units: time in microseconds; bandwidth in GB/s with 1 GB = 1e9 bytes (as nccl-tests; AWS's
// nccom-test prints GiB/s). algbw = bytes / time; busbw = algbw * factor(nranks), the factor
// being the collective's (all-reduce 2(n-1)/n, all-gather (n-1)/n, broadcast 1, ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace trnccl::perf {

struct Bandwidth {
  double algBw = 0;  // GB/s
  double busBw = 0;  // GB/s
};
Bandwidth bandwidth(size_t bytes, double seconds, double busFactor);

// Bus-bandwidth factors of doc/PERFORMANCE.md in nccl-tests.
double allReduceBusFactor(int nranks);  // 2(n-1)/n
double gatherBusFactor(int nranks);     // (n-1)/n: all-gather, reduce-scatter, all-to-all
double unitBusFactor(int nranks);       // 1: broadcast, reduce, send/recv

// value in a field of `width` characters, as many decimals as fit (nccl-tests' getFloatStr).
std::string formatFloat(double value, int width);

std::string headerLines();  // "#\n" plus the three header lines
// "%12li  %12li  %8s  %6s  %6s" of one row.
std::string rowPrefix(size_t bytes, size_t count, std::string_view type, std::string_view op,
                      int root);
// "  %7s  %6s  %6s  %6g" (or N/A when unchecked) for the out-of-place or in-place half.
std::string rowBody(double timeUs, Bandwidth bw, bool checked, int64_t wrong);
// The same field widths, N/A in each: a half that the collective does not have.
std::string rowBodyNotRun();
std::string footerLines(int64_t errors, double avgBusBw, std::string_view program);

// Mean of the busbw column over every measured half-row.
class BusBwAverage {
 public:
  void add(double busBw) {
    sum_ += busBw;
    ++count_;
  }
  double mean() const { return count_ ? sum_ / double(count_) : 0; }

 private:
  double sum_ = 0;
  int64_t count_ = 0;
};

}  // namespace trnccl::perf
