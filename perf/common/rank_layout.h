// Where the ranks of a run live, numbered as nccl-tests does: every process runs -t threads and
// every thread drives -g devices, so a run has processes x threads x gpus ranks, and thread t of
// process p owns ranks (p * threads + t) * gpus .. + gpus - 1. Devices are numbered the same way
// over the processes of one host (their local rank), so the processes of a host never share one.
// Pure arithmetic, header only, so the unit test needs neither MPI nor devices.
#pragma once

#include <algorithm>
#include <span>

#include "common/world.h"

namespace trnccl::perf {

struct RankLayout {
  int processes = 1;
  int threads = 1;  // -t
  int gpus = 1;     // -g

  int nranks() const { return processes * threads * gpus; }
  // Global rank of device `gpu` of thread `thread` of process `process`.
  int rank(int process, int thread, int gpu) const {
    return (process * threads + thread) * gpus + gpu;
  }
  // Device index of the same rank on its host, from the process's local rank.
  int device(int localProcess, int thread, int gpu) const {
    return rank(localProcess, thread, gpu);
  }
};

// One process's share of a -a time reduction over its threads: thread 0's time (rank 0), the
// mean, the minimum or the maximum. World::reduceTime then combines the processes' shares the
// same way; every process has the same number of threads, so the mean of the processes' means
// is the mean over every thread of the run, as nccl-tests averages over processes x threads.
inline double combineThreadTimes(std::span<const double> seconds, TimeAverage how) {
  if (seconds.empty()) return 0;
  switch (how) {
    case TimeAverage::kRank0:
      return seconds.front();
    case TimeAverage::kMin:
      return *std::min_element(seconds.begin(), seconds.end());
    case TimeAverage::kMax:
      return *std::max_element(seconds.begin(), seconds.end());
    case TimeAverage::kMean:
      break;
  }
  double sum = 0;
  for (const double s : seconds) sum += s;
  return sum / double(seconds.size());
}

}  // namespace trnccl::perf
