// trnccl-sim-calibrate-step: times the steps of the library itself between N processes of this
// machine, for trnccl-sim-calibrate's per-message and per-call costs (docs/SIMULATOR.md, "This
// machine"). N processes (process i on the (i mod k)-th usable CPU, as the benchmark's rank i)
// join one communicator through the public API (trncclGetUniqueId in process 0,
// trncclCommInitRank) and, for each size, run calls of ring steps: a group of sends of that many
// bytes to the next rank and as many receives from the previous one, enqueued back to back on a
// stream and synchronized once, as all_reduce_perf runs its iterations. The i-th send and the
// i-th receive of a group are its i-th round (algorithms/p2p/batch.cc), and rounds run one after
// the other in one schedule, as a ring all-reduce's steps do. Calls of one round and calls of
// kRounds rounds are both timed, so a step's own cost, (t(kRounds) - t(1)) / (kRounds - 1), is
// told apart from what the call costs once (enqueue, the executor's start and end): t(1) less a
// step. Every round sends fresh data, as a ring's step forwards what its sender has just
// reduced: before the call, a device copy on the stream rewrites the region each round sends
// from (a region of its own per round). Otherwise the receiver's in-place reads of a buffer
// nobody writes hit its own cache from the second call on (transports/shm/README.md, "In
// place against out of place"), and a step came out at a fraction of an all-reduce's
// (docs/SIMULATOR.md, twelfth session). The copies' own time, timed alone (calls of kRounds
// copies and nothing else), is taken off: a step is (t(kRounds) - t(1)) / (kRounds - 1) less a
// copy, the call's cost t(1) less a step and a copy. With more processes than CPUs (4 ranks on
// this machine's 2) the rounds are CPU-bound: each core runs its processes' workers and host
// threads in turn, so the CPU time a host thread spends enqueuing the calls is wall time of the
// rounds. A p2p group builds its schedule at every call (about 0.2-0.3 us of the host thread per
// round), which a collective's cached schedule never pays; so each process's host thread is timed
// (CLOCK_THREAD_CPUTIME_ID around its enqueues) and, oversubscribed, a step is also less the
// host threads' CPU time per round of the busiest core (docs/SIMULATOR.md, seventeenth session;
// the call's cost keeps it: t(1) less the step before that correction, less a copy). A call's
// time is the slowest process's elapsed time over the calls; the run is repeated
// --repeat times and the median (a step's: of the repetitions within twice the fastest, step_cost.h
// fastModeMedian), lowest and highest of each figure are printed, one line per
// size, then the call's own cost over all sizes, then the host threads' share taken off a step
// (0 with a CPU per process; the median over the sizes and runs):
//   BYTES STEP_MEDIAN_US STEP_LOWEST_US STEP_HIGHEST_US
//   call CALL_MEDIAN_US CALL_LOWEST_US CALL_HIGHEST_US
//   host HOST_MEDIAN_US HOST_LOWEST_US HOST_HIGHEST_US
// then each size's copy alone (a rewrite of a round's bytes, the least over the runs: with two
// processes on a CPU it is bimodal, one copying alone or both in turns), and one
// line per repetition with each size's step and copy (us, in the order above) and what
// machine_probe.h saw around it (docs/SIMULATOR.md, eighteenth session): the one-way time of a
// cache line between the two CPUs before and after it (us), its wall time, the CPUs' jiffies
// during it, and the step processes' voluntary and involuntary context switches and minor faults:
//   copies COPY_US...
//   rep R STEP_US... copy COPY_US... hop BEFORE AFTER seconds S busy B idle I iowait W steal T
//     nvcsw V nivcsw N minflt F
// The library's real shm transport, executor and waits are all in these times: what a ring
// step pays beyond its bytes is the intercept of a fit of the step times against their size
// (trnccl-sim-calibrate does the fit). Only the public API is used (libtrnccl), so this is a
// program of its own rather than part of trnccl-sim-calibrate, which uses the library's layers.
// --probe prints only the cache line's time between the CPUs (perf/sim/host_compare.sh runs it
// around every benchmark run).
// Usage: trnccl-sim-calibrate-step [--ranks N] [--repeat R] | --probe
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <trnccl/trnccl.h>
#include <trnccl/trnrt.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "machine_probe.h"
#include "placement.h"
#include "step_cost.h"

namespace {

// The sizes of a step, and how many calls each is timed over (about 10-30 ms of calls).
struct Size {
  size_t bytes;
  int calls;
};
constexpr Size kSizes[] = {{8, 2000},    {1024, 2000}, {4096, 1500}, {16384, 1000},
                           {32768, 800}, {65536, 500}, {131072, 300}};
constexpr size_t kNumSizes = std::size(kSizes);
constexpr size_t kMaxBytes = 131072;
constexpr int kMaxRanks = 16;
// Rounds of the longer calls; they are timed over calls / kLongCallsDivisor calls.
constexpr int kRounds = 8;
constexpr int kLongCallsDivisor = 4;
// The sizes up to this give the call's own cost.
constexpr size_t kCallCostBytes = 4096;

// Memory shared by the processes of one run: process 0's unique id, and each one's times.
struct Shared {
  std::atomic<int> idReady{0};
  trncclUniqueId id{};
  double us[kNumSizes][kMaxRanks] = {};      // calls of one round
  double longUs[kNumSizes][kMaxRanks] = {};  // calls of kRounds rounds
  double copyUs[kNumSizes][kMaxRanks] = {};  // one rewrite of a round's region, alone
  // The host thread's CPU time per call while enqueuing calls of one round and of kRounds.
  double hostUs[kNumSizes][kMaxRanks] = {};
  double longHostUs[kNumSizes][kMaxRanks] = {};
};

bool ok(trncclResult_t r, const char* what) {
  if (r == trncclSuccess) return true;
  std::fprintf(stderr, "trnccl-sim-calibrate-step: %s: %s (%s)\n", what, trncclGetErrorString(r),
               trncclGetLastError(nullptr));
  return false;
}
bool ok(trnrtError_t r, const char* what) {
  if (r == trnrtSuccess) return true;
  std::fprintf(stderr, "trnccl-sim-calibrate-step: %s: %s\n", what, trnrtGetErrorString(r));
  return false;
}

// Rewrites the regions of `rounds` rounds (round i sends from send + i * kMaxBytes) from
// `fresh`, on the stream.
bool rewrite(trnrtStream_t stream, char* send, const void* fresh, size_t bytes, int rounds) {
  bool good = true;
  for (int i = 0; i < rounds && good; ++i) {
    good =
        ok(trnrtMemcpyAsync(send + i * kMaxBytes, fresh, bytes, trnrtMemcpyDeviceToDevice, stream),
           "trnrtMemcpyAsync");
  }
  return good;
}

// This thread's CPU time, us.
double threadCpuUs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

// One call: `rounds` ring steps of `bytes` of this rank, one after the other, each from its
// region, rewritten just before.
bool steps(trncclComm_t comm, trnrtStream_t stream, char* send, const void* fresh, void* recv,
           size_t bytes, int rounds, int rank, int ranks) {
  bool good =
      rewrite(stream, send, fresh, bytes, rounds) && ok(trncclGroupStart(), "trncclGroupStart");
  for (int i = 0; i < rounds && good; ++i) {
    good =
        ok(trncclSend(send + i * kMaxBytes, bytes, trncclUint8, (rank + 1) % ranks, comm, stream),
           "trncclSend") &&
        ok(trncclRecv(recv, bytes, trncclUint8, (rank + ranks - 1) % ranks, comm, stream),
           "trncclRecv");
  }
  return ok(trncclGroupEnd(), "trncclGroupEnd") && good;
}

// Process `rank` of a run: joins the communicator, then times every size's calls.
bool runRank(int rank, int ranks, Shared* shared) {
  using Clock = std::chrono::steady_clock;
  if (rank == 0) {
    if (!ok(trncclGetUniqueId(&shared->id), "trncclGetUniqueId")) return false;
    shared->idReady.store(1, std::memory_order_release);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (shared->idReady.load(std::memory_order_acquire) == 0) {
    if (Clock::now() > deadline) return false;
    usleep(100);
  }
  int devices = 0;
  if (!ok(trnrtGetDeviceCount(&devices), "trnrtGetDeviceCount") || devices < 1) return false;
  trncclComm_t comm = nullptr;
  trnrtStream_t stream = nullptr;
  void *send = nullptr, *recv = nullptr, *fresh = nullptr;
  bool good = ok(trnrtSetDevice(rank % devices), "trnrtSetDevice") &&
              ok(trncclCommInitRank(&comm, ranks, shared->id, rank), "trncclCommInitRank") &&
              ok(trnrtStreamCreate(&stream), "trnrtStreamCreate") &&
              ok(trnrtMalloc(&send, kRounds * kMaxBytes), "trnrtMalloc") &&
              ok(trnrtMalloc(&fresh, kMaxBytes), "trnrtMalloc") &&
              ok(trnrtMalloc(&recv, kMaxBytes), "trnrtMalloc") &&
              ok(trnrtMemset(fresh, rank + 1, kMaxBytes), "trnrtMemset");
  char* regions = static_cast<char*>(send);
  // `calls` calls of `rounds` rounds (or, with copiesOnly, only their rewrites): warm-up, then
  // timed; us per call, and the host thread's CPU us per call while enqueuing them.
  double ignored = 0;
  const auto time = [&](size_t bytes, int rounds, int calls, bool copiesOnly, double& us,
                        double& hostUs) {
    const auto call = [&] {
      return copiesOnly ? rewrite(stream, regions, fresh, bytes, rounds)
                        : steps(comm, stream, regions, fresh, recv, bytes, rounds, rank, ranks);
    };
    for (int c = 0; c < calls / 10 && good; ++c) good = call();
    good = good && ok(trnrtStreamSynchronize(stream), "trnrtStreamSynchronize");
    const auto t0 = Clock::now();
    const double cpu0 = threadCpuUs();
    for (int c = 0; c < calls && good; ++c) good = call();
    hostUs = (threadCpuUs() - cpu0) / calls;
    good = good && ok(trnrtStreamSynchronize(stream), "trnrtStreamSynchronize");
    us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls;
  };
  for (size_t s = 0; s < kNumSizes && good; ++s) {
    const auto [bytes, calls] = kSizes[s];
    time(bytes, 1, calls, false, shared->us[s][rank], shared->hostUs[s][rank]);
    time(bytes, kRounds, calls / kLongCallsDivisor, false, shared->longUs[s][rank],
         shared->longHostUs[s][rank]);
    time(bytes, kRounds, calls / kLongCallsDivisor, true, shared->copyUs[s][rank], ignored);
    shared->copyUs[s][rank] /= kRounds;
  }
  // The step delivered the previous rank's data.
  unsigned char last = 0;
  good = good && ok(trnrtMemcpy(&last, static_cast<unsigned char*>(recv) + kMaxBytes - 1, 1,
                                trnrtMemcpyDeviceToHost),
                    "trnrtMemcpy");
  good = good && last == static_cast<unsigned char>((rank + ranks - 1) % ranks + 1);
  if (send != nullptr) trnrtFree(send);
  if (fresh != nullptr) trnrtFree(fresh);
  if (recv != nullptr) trnrtFree(recv);
  if (stream != nullptr) trnrtStreamDestroy(stream);
  if (comm != nullptr) good = ok(trncclCommDestroy(comm), "trncclCommDestroy") && good;
  return good;
}

// One run of `ranks` processes; false if any failed.
bool runOnce(int ranks, Shared* shared) {
  return trnccl::calibrate::runProcesses(ranks, [&](int i) { return runRank(i, ranks, shared); });
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 2, repeat = 5;
  CLI::App app{
      "trnccl-sim-calibrate-step: the library's ring step and call, timed by N "
      "processes of the public API (run by trnccl-sim-calibrate)",
      "trnccl-sim-calibrate-step"};
  app.add_option("--ranks", ranks, "processes (default 2)")->check(CLI::Range(2, kMaxRanks));
  app.add_option("--repeat", repeat, "runs, each size's median kept (default 5)")
      ->check(CLI::Range(1, 100));
  bool probe = false;
  app.add_flag("--probe", probe,
               "time nothing else: print the one-way time of a cache line between the first two "
               "CPUs (us), as \"hop US\" (machine_probe.h)");
  CLI11_PARSE(app, argc, argv);
  if (probe) {
    std::printf("hop %.4f\n", trnccl::calibrate::crossCpuHopUs());
    return 0;
  }
  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 1;
  // Per size, each run's step and call cost (from the slowest rank's times).
  std::vector<std::vector<double>> stepUs(kNumSizes), callUs(kNumSizes);
  std::vector<double> hostShares;
  const std::vector<int> usable = trnccl::calibrate::usableCpus();
  const int cpus = std::max<int>(1, static_cast<int>(usable.size()));
  std::vector<std::string> probes;                     // one "rep" line per run (machine_probe.h)
  std::vector<std::vector<double>> copyUs(kNumSizes);  // a rewrite of a round's bytes, alone
  for (int r = 0; r < repeat; ++r) {
    auto* shared = new (mem) Shared;
    const double hopBefore = trnccl::calibrate::crossCpuHopUs();
    const trnccl::calibrate::CpuJiffies j0 = trnccl::calibrate::readCpuJiffies(usable);
    rusage u0{}, u1{};
    getrusage(RUSAGE_CHILDREN, &u0);
    const auto t0 = std::chrono::steady_clock::now();
    if (!runOnce(ranks, shared)) {
      std::fprintf(stderr, "trnccl-sim-calibrate-step: a rank failed\n");
      return 1;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    getrusage(RUSAGE_CHILDREN, &u1);
    const trnccl::calibrate::CpuJiffies j1 = trnccl::calibrate::readCpuJiffies(usable);
    const double hopAfter = trnccl::calibrate::crossCpuHopUs();
    std::string probe = "rep " + std::to_string(r), copies = " copy";
    for (size_t s = 0; s < kNumSizes; ++s) {
      const double one = *std::max_element(shared->us[s], shared->us[s] + ranks);
      const double many = *std::max_element(shared->longUs[s], shared->longUs[s] + ranks);
      const double copy = *std::max_element(shared->copyUs[s], shared->copyUs[s] + ranks);
      const double step = (many - one) / (kRounds - 1) - copy;
      // Oversubscribed: the busiest core's host threads' CPU time per round (process i runs on
      // the (i mod cpus)-th CPU), wall time of the CPU-bound rounds.
      double host = 0;
      for (int c = 0; ranks > cpus && c < cpus; ++c) {
        double onCore = 0;
        for (int i = c; i < ranks; i += cpus) {
          onCore += (shared->longHostUs[s][i] - shared->hostUs[s][i]) / (kRounds - 1);
        }
        host = std::max(host, onCore);
      }
      host = std::clamp(host, 0.0, std::max(0.0, step));
      hostShares.push_back(host);
      stepUs[s].push_back(step - host);
      callUs[s].push_back(one - step - copy);
      probe += " " + std::to_string(step - host);
      copies += " " + std::to_string(copy);
      copyUs[s].push_back(copy);
    }
    char tail[320];
    std::snprintf(tail, sizeof tail,
                  " hop %.4f %.4f seconds %.2f busy %llu idle %llu iowait %llu steal %llu "
                  "nvcsw %ld nivcsw %ld minflt %ld",
                  hopBefore, hopAfter, seconds, static_cast<unsigned long long>(j1.busy - j0.busy),
                  static_cast<unsigned long long>(j1.idle - j0.idle),
                  static_cast<unsigned long long>(j1.iowait - j0.iowait),
                  static_cast<unsigned long long>(j1.steal - j0.steal), u1.ru_nvcsw - u0.ru_nvcsw,
                  u1.ru_nivcsw - u0.ru_nivcsw, u1.ru_minflt - u0.ru_minflt);
    probes.push_back(probe + copies + tail);
  }
  const auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  // A call's own cost does not depend on its size: taken where the steps are small, so that
  // it is not the difference of two large times.
  std::vector<double> calls;
  for (size_t s = 0; s < kNumSizes; ++s) {
    std::vector<double>& v = stepUs[s];
    const double m = trnccl::calibrate::fastModeMedian(v);  // step_cost.h: a slow mode's out
    std::sort(v.begin(), v.end());
    std::printf("%zu %.3f %.3f %.3f\n", kSizes[s].bytes, m, v.front(), v.back());
    if (kSizes[s].bytes <= kCallCostBytes) {
      calls.insert(calls.end(), callUs[s].begin(), callUs[s].end());
    }
  }
  const double m = median(calls);
  std::printf("call %.3f %.3f %.3f\n", m, calls.front(), calls.back());
  const double h = median(hostShares);
  std::printf("host %.3f %.3f %.3f\n", h, hostShares.front(), hostShares.back());
  std::printf("copies");
  for (const std::vector<double>& v : copyUs)
    std::printf(" %.3f", *std::min_element(v.begin(), v.end()));
  std::printf("\n");
  for (const std::string& p : probes) std::printf("%s\n", p.c_str());
  return 0;
}
