// trnccl-sim-calibrate: measures this machine for trnccl-sim's `host` description, the model of
// N ranks of one machine talking over the shm transport (docs/SIMULATOR.md, "This machine").
// Both figures are measured with N processes at once, as a run of N ranks has them (on 2 cores,
// 4 ranks share the cores and the memory bus):
//   - copy rate: each process copies a buffer far larger than the caches into shared memory,
//     all at once; the rate of the slowest;
//   - reduction rate: each process sums two float buffers as large into a third with the
//     emulated core's kernel (device::reduce), all at once; the rate of the slowest;
//   - a neighbour's copy and sum rates: each process copies, or sums with a buffer of its own, the
//     buffer its neighbour has just written (shared memory), all at once, as a ring step reads a
//     peer's data (crossOnce); the rate of the slowest;
//   - hand-off latency: a token passed around the N processes through shared memory, each
//     waiting the way the library does (spin, then sleep on a futex doorbell); time per hop;
//   - the copy and reduction rates again for each working set of 64 KiB, 128 KiB, ... 32 MiB
//     (the bytes of all buffers one process touches: a copy's source and destination of half
//     of it each, a reduction's three buffers of a third), each repeated until it moved
//     128 MiB: the description's bands (docs/TOPOLOGY.md), where the caches hold the buffers;
//   - the library's own cost per step: trnccl-sim-calibrate-step (library_step.cc), ring steps
//     of 8 B to 128 KiB between N processes through the public API and the shm transport; a fit
//     below the zero-copy size (step_cost.h) gives a FIFO message's fixed cost (the link's
//     latency, at most the hand-off, and message_us), the rounds read in place less it
//     in_place_fresh_us, calls of one step and of several call_us. A run whose steps are far
//     slower than the copies it times alone allow (a slow mode of this machine) is run
//     again (--step-attempts runs at most, --step-pause s apart; step_check.h); the description
//     says which was kept.
// --refit FILE converts a description an earlier calibration wrote to these rules (refit.h).
// Process i runs on the (i mod k)-th of the k CPUs it may use, as perf/sim/pin_rank.sh places
// rank i of the benchmark it is compared with. Each figure is measured --repeat times (default
// 5); the description takes the median, and the spread (lowest to highest) is printed.
// Writes a description (YAML) in which every rank is a chip of its own on a switch. A message
// over the shm transport costs its bytes twice on each rank's core (the sender copies into the
// FIFO, the receiver copies out, and a rank does both at once in every collective step), so a
// port's bandwidth is half the copy rate; from the transport's zero-copy size (zero_copy.h
// kDefaultZcopyBytes) the receiver reads a message in place, one copy: the link's
// in_place_bytes. The "HBM" of a chip is three times the reduction rate, as the simulator
// charges three bytes of HBM traffic per byte reduced. The bands follow the same rules, per
// working set; the plain fields are the rates of 64 MiB buffers, above every band.
// --neighbour-out FILE also writes the description with the neighbour's copy and sum rates
// (session 10's model), which predicted no better than the local rates (docs/SIMULATOR.md).
// Usage: trnccl-sim-calibrate [--chips N] [--out FILE] [--neighbour-out FILE] [--repeat R]
//          [--step-attempts A] [--step-pause S]
//        trnccl-sim-calibrate --refit OLD.yaml --out FILE
// (CLI11: --help; a value out of range or an unknown option is an error before any timing)
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/wait.h"
#include "device/reduce.h"
#include "placement.h"
#include "refit.h"
#include "step_check.h"
#include "step_cost.h"
#include "transports/shm/zero_copy.h"

namespace {

using trnccl::Deadline;
using trnccl::Doorbell;
using trnccl::DoorbellWord;
using trnccl::calibrate::callUs;
using trnccl::calibrate::linkLatencyUs;
using trnccl::calibrate::messageUs;
using trnccl::calibrate::stepList;
using trnccl::calibrate::usableCpus;
using Seconds = std::chrono::duration<double>;

// The working set of the rate above every band: each buffer 64 MiB, far larger than the caches.
constexpr size_t kCopyBytes = size_t{64} << 20;
// Working sets of the bands (the bytes of all buffers one process touches), 64 KiB to 32 MiB.
constexpr size_t kFirstBand = size_t{64} << 10, kLastBand = size_t{32} << 20;
// Each measurement moves this much (at least two rounds): 10-50 ms at this machine's rates.
constexpr size_t kMovedBytes = size_t{128} << 20;
constexpr int kTokenRounds = 5000;

// Memory shared by the measuring processes: a start gate, one result per process, and one
// doorbell per process for the token.
struct Shared {
  std::atomic<int> arrived{0};
  std::atomic<bool> failed{false};
  double seconds[64] = {};
  DoorbellWord bell[64];
  DoorbellWord meeting;  // its word counts the arrivals at every meeting point so far
};

// Waits until `word` holds at least `want`, sleeping on `bell` between looks; false after 10 s.
bool await(const std::atomic<uint32_t>& word, uint32_t want, Doorbell& bell) {
  trnccl::Backoff backoff;
  const Deadline deadline = Deadline::after(std::chrono::seconds(10));
  for (;;) {
    const uint32_t seen = bell.snapshot();
    if (word.load(std::memory_order_acquire) >= want) return true;
    if (deadline.expired()) return false;
    if (!backoff.next()) bell.sleep(seen, std::chrono::milliseconds(1));
  }
}

// Runs body(i, shared) in `procs` processes that start together; false if any failed.
bool runTogether(int procs, Shared* shared, const std::function<bool(int, Shared*)>& body) {
  return trnccl::calibrate::runProcesses(procs, [&](int i) {
    shared->arrived.fetch_add(1);
    const Deadline deadline = Deadline::after(std::chrono::seconds(10));
    while (shared->arrived.load() < procs && !deadline.expired()) usleep(100);
    return body(i, shared);
  });
}

// How often a measurement of buffers of `bytes` each repeats its copy or reduction.
int roundsFor(size_t bytes) { return static_cast<int>(std::max<size_t>(2, kMovedBytes / bytes)); }

// Each process reduces two float buffers of `bytes` into a third with the emulated core's kernel
// (device::reduce, as the executor does), all at once: a working set of 3 * bytes.
bool reduceOnce(int i, Shared* shared, size_t bytes) {
  const size_t count = bytes / sizeof(float);
  std::vector<float> a(count, 1.0f), b(count, 2.0f), dst(count, 0.0f);
  using trnccl::device::DataType;
  using trnccl::device::RedOp;
  trnccl::device::reduce(DataType::kFloat32, RedOp::kSum, dst.data(), a.data(), b.data(), count);
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < roundsFor(bytes); ++r) {
    trnccl::device::reduce(DataType::kFloat32, RedOp::kSum, dst.data(), a.data(), b.data(), count);
  }
  shared->seconds[i] = Seconds(std::chrono::steady_clock::now() - t0).count();
  return dst[count / 2] == 3.0f;
}

// Each process copies a buffer of `bytes` into shared memory, all at once: a working set of
// 2 * bytes.
bool copyOnce(int i, Shared* shared, size_t bytes) {
  void* dst = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (dst == MAP_FAILED) return false;
  std::string src(bytes, 'x');
  std::memcpy(dst, src.data(), bytes);  // fault the pages in
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < roundsFor(bytes); ++r) {
    std::memcpy(dst, src.data(), bytes);
    asm volatile("" ::: "memory");  // every round's copy happens
  }
  shared->seconds[i] = Seconds(std::chrono::steady_clock::now() - t0).count();
  munmap(dst, bytes);
  return true;
}

// How often the cross-process copy of buffers of `bytes` repeats: every round has two meeting
// points, which on 4 processes sharing 2 cores cost a sleep each, so fewer than roundsFor.
int crossRoundsFor(size_t bytes) { return std::min(roundsFor(bytes), 1024); }

// Each process copies (or sums with its own data) the buffer its neighbour (i + 1 mod N) has
// just written, as a ring step of the shm transport reads a peer's data in place (or out of the
// FIFO the peer filled): those lines come from the other core's caches, or from memory, not from
// this core's. Every round each process writes its own buffer of `bytes` in `buffers` (shared, N
// of them), all meet, each copies its neighbour's into a private buffer, or sums it with a private
// buffer into a third (device::reduce, as the executor), timed, and all meet again. The working
// set of a process: its own buffer and its private ones, 2 (copy) or 3 (sum) times `bytes`.
bool crossOnce(int i, Shared* shared, std::byte* buffers, size_t bytes, int procs, bool sum) {
  Doorbell bell;
  bell.rebind(&shared->meeting, nullptr);
  uint32_t meetings = 0;
  const auto meet = [&] {
    meetings += static_cast<uint32_t>(procs);
    Doorbell::ring(&shared->meeting);
    return await(shared->meeting.seq, meetings, bell);
  };
  auto* mine = reinterpret_cast<float*>(buffers + static_cast<size_t>(i) * bytes);
  const auto* next = reinterpret_cast<const float*>(buffers + size_t((i + 1) % procs) * bytes);
  const size_t count = bytes / sizeof(float);
  std::vector<float> own(sum ? count : 0, 1.0f), dst(count);
  const int rounds = crossRoundsFor(bytes);
  double seconds = 0;
  for (int r = 0; r < rounds; ++r) {
    std::fill(mine, mine + count, static_cast<float>(r));
    if (!meet()) return false;
    const auto t0 = std::chrono::steady_clock::now();
    if (sum) {
      using trnccl::device::DataType;
      using trnccl::device::RedOp;
      trnccl::device::reduce(DataType::kFloat32, RedOp::kSum, dst.data(), own.data(), next, count);
    } else {
      std::memcpy(dst.data(), next, bytes);
    }
    asm volatile("" ::: "memory");  // every round's copy happens
    seconds += Seconds(std::chrono::steady_clock::now() - t0).count();
    if (!meet()) return false;
  }
  shared->seconds[i] = seconds;
  return dst[count / 2] == static_cast<float>(rounds - 1) + (sum ? 1.0f : 0.0f);
}

// Process i waits for the token's round r at its own word, then hands it to process i + 1.
bool passToken(int i, Shared* shared, int procs) {
  Doorbell mine;
  mine.rebind(&shared->bell[i], nullptr);
  const auto& word = shared->bell[i].seq;  // the token's round, stored in the doorbell's word
  DoorbellWord* next = &shared->bell[(i + 1) % procs];
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t r = 1; r <= kTokenRounds; ++r) {
    if (i != 0 && !await(word, r, mine)) return false;
    Doorbell::ring(next);  // bumps next->seq: the token's round there becomes r
    if (i == 0 && !await(word, r, mine)) return false;
  }
  shared->seconds[i] = Seconds(std::chrono::steady_clock::now() - t0).count();
  return true;
}

// Repeats a measurement of `procs` processes: each time, the slowest process's seconds.
struct Spread {
  double median = 0, low = 0, high = 0;  // of rate(seconds), over the repetitions
  bool ok = true;
};
Spread measure(int procs, int repeat, const std::function<bool(int, Shared*)>& body,
               const std::function<double(double)>& rate, void* mem) {
  std::vector<double> rates;
  Spread s;
  for (int r = 0; r < repeat && s.ok; ++r) {
    auto* shared = new (mem) Shared;
    s.ok = runTogether(procs, shared, body);
    rates.push_back(rate(*std::max_element(shared->seconds, shared->seconds + procs)));
  }
  std::sort(rates.begin(), rates.end());
  const size_t n = rates.size();
  s.median = n % 2 ? rates[n / 2] : (rates[n / 2 - 1] + rates[n / 2]) / 2;
  s.low = rates.front();
  s.high = rates.back();
  s.ok = s.ok && s.median > 0;
  return s;
}

// crossOnce's rate for buffers of `bytes`, shared by `procs` processes. Only the copies are
// timed, and a copy between two meetings mostly runs without losing its core, so on k < N CPUs
// the rate is scaled by k / N: N ranks all copying at once, as in a ring step, share the cores
// (the plain copy loop, timed whole, has that in its measurement).
Spread measureCross(int procs, int repeat, size_t bytes, bool sum, void* mem) {
  const double share =
      std::min(1.0, static_cast<double>(std::max<size_t>(1, usableCpus().size())) / procs);
  const size_t all = bytes * static_cast<size_t>(procs);
  void* buffers = mmap(nullptr, all, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (buffers == MAP_FAILED) return Spread{.ok = false};
  Spread s = measure(
      procs, repeat,
      [&](int i, Shared* sh) {
        return crossOnce(i, sh, static_cast<std::byte*>(buffers), bytes, procs, sum);
      },
      [bytes, share](double t) {
        return share * crossRoundsFor(bytes) * static_cast<double>(bytes) / t / 1e9;
      },
      mem);
  munmap(buffers, all);
  return s;
}

// The copy and reduction rates of one working set.
struct Rates {
  size_t workingSet = 0;
  // Local copies and sums, and the same of a neighbour's fresh data (crossOnce).
  Spread copy, cross, reduce, crossReduce;
  bool ok() const { return copy.ok && cross.ok && reduce.ok && crossReduce.ok; }
};

// Copies of `copyBytes` and reductions into buffers of `reduceBytes`, all processes at once.
Rates measureRates(int procs, int repeat, size_t copyBytes, size_t reduceBytes, void* mem) {
  const auto gbps = [](size_t bytes) {
    return [bytes](double s) { return roundsFor(bytes) * static_cast<double>(bytes) / s / 1e9; };
  };
  Rates r;
  r.workingSet = 2 * copyBytes;
  r.copy = measure(
      procs, repeat, [copyBytes](int i, Shared* sh) { return copyOnce(i, sh, copyBytes); },
      gbps(copyBytes), mem);
  r.reduce = measure(
      procs, repeat, [reduceBytes](int i, Shared* sh) { return reduceOnce(i, sh, reduceBytes); },
      gbps(reduceBytes), mem);
  r.cross = measureCross(procs, repeat, copyBytes, false, mem);
  r.crossReduce = measureCross(procs, repeat, reduceBytes, true, mem);
  return r;
}

// A band list (docs/TOPOLOGY.md): each working set's rate (`rate` of its Rates), times `scale`,
// for a call of `chips` ranks on this machine's CPUs (refit.h, bandBytes).
std::string bandList(const std::vector<Rates>& bands, const Spread Rates::*rate, double scale,
                     int chips) {
  const int cpus = static_cast<int>(usableCpus().size());
  std::string out;
  for (const Rates& b : bands) {
    out += fmt::format("{}{{bytes: {}, gbps: {:.2f}}}", out.empty() ? "" : ", ",
                       trnccl::calibrate::bandBytes(b.workingSet, chips, cpus),
                       scale * (b.*rate).median);
  }
  return "[" + out + "]";
}

// The description; its links move data at half the rate of the copies and its chips' "HBM" at
// three times the rate of the sums: of local data (the default), or of a neighbour's fresh data
// (`neighbours`, --neighbour-out).
std::string describe(int chips, const Rates& big, const std::vector<Rates>& bands,
                     const Spread& hop, const trnccl::calibrate::StepFit& step, bool neighbours,
                     const std::string& kept) {
  using trnccl::transport::shm::kDefaultZcopyBytes;
  const Spread Rates::*link = neighbours ? &Rates::cross : &Rates::copy;
  const Spread Rates::*sum = neighbours ? &Rates::crossReduce : &Rates::reduce;
  const Spread &copy = big.copy, &cross = big.cross, &red = big.reduce, &xred = big.crossReduce;
  return fmt::format(
      "# This machine as trnccl-sim sees the shm transport with {} ranks, measured by\n"
      "# trnccl-sim-calibrate (medians; lowest-highest of the repetitions in brackets), all\n"
      "# processes at once, GB/s per rank: copies {:.2f} [{:.2f}-{:.2f}], of a neighbour's fresh\n"
      "# data {:.2f} [{:.2f}-{:.2f}]; float sums (the emulated core's kernel) {:.2f}\n"
      "# [{:.2f}-{:.2f}], with a neighbour's fresh data {:.2f} [{:.2f}-{:.2f}]; hand-off latency\n"
      "# {:.2f} [{:.2f}-{:.2f}] us per hop of a token among them. The links and the HBM take the\n"
      "# rates {}.\n"
      "# From {} bytes (shm's zero-copy size) the receiver reads a message in place\n"
      "# (docs/SIMULATOR.md). The bands: the same rates for working sets of at most `bytes`\n"
      "# (each process's buffers), which the caches hold in part or whole; {} {} ranks on\n"
      "# {} CPUs: each measured working set times the CPUs over the ranks when fewer (refit.h).\n"
      "# A ring step of the library itself (trnccl-sim-calibrate-step, medians) took {}us;\n"
      "# fitted: {:.2f} us + {:.4f} us/KiB through the FIFO; read in place (fresh data) {:.2f} us\n"
      "# a round. Every message costs the FIFO's fixed part (the link's latency, at most that,\n"
      "# and message_us); a message read in place whose bytes were written during the call at\n"
      "# least in_place_fresh_us (the in-place rounds less that fixed part). A call cost {:.2f}\n"
      "# [{:.2f}-{:.2f}] us once, beyond its steps (call_us). Each step is less {:.2f} "
      "[{:.2f}-{:.2f}]\n"
      "# us a round of its host threads' CPU time (ranks sharing a CPU: library_step.cc).\n"
      "# The step program: {} (step_check.h).\n"
      "name: host\n"
      "description: \"{} ranks of this machine over shared memory (measured)\"\n"
      "instances: 1\nchips_per_instance: {}\nlnc: 1\n"
      "device:\n  {{kind: host, cores_per_chip: 1, hbm_gib_per_chip: 1, hbm_bandwidth_gbps: "
      "{:.2f},\n"
      "   message_us: {:.2f}, in_place_fresh_us: {:.2f}, call_us: {:.2f}, hbm_bands: {}}}\n"
      "fabric:\n  kind: switch\n"
      "  link:\n    {{class: pcie, bandwidth_gbps: {:.2f}, latency_us: {:.2f}, in_place_bytes: "
      "{},\n"
      "     bands: {}}}\n",
      chips, copy.median, copy.low, copy.high, cross.median, cross.low, cross.high, red.median,
      red.low, red.high, xred.median, xred.low, xred.high, hop.median, hop.low, hop.high,
      neighbours ? "of a neighbour's data" : "of local data", kDefaultZcopyBytes,
      trnccl::calibrate::kBandMarker, chips, usableCpus().size(), stepList(step), step.fixedUs,
      step.usPerKiB, step.inPlaceUs, step.call.us, step.call.lowUs, step.call.highUs, step.host.us,
      step.host.lowUs, step.host.highUs, kept, chips, chips, 3 * (big.*sum).median,
      messageUs(step, hop.median), step.freshUs, callUs(step), bandList(bands, sum, 3, chips),
      (big.*link).median / 2, linkLatencyUs(step, hop.median), kDefaultZcopyBytes,
      bandList(bands, link, 0.5, chips));
}

}  // namespace

int main(int argc, char** argv) {
  int chips = 4, repeat = 5;
  std::string out = "host.yaml", neighbourOut, refit;
  CLI::App app{
      "trnccl-sim-calibrate: this machine's shm copy and sum rates, hand-off latency "
      "and the library's cost per message and per call, as a `host` description",
      "trnccl-sim-calibrate"};
  app.add_option("--chips", chips, "processes, one per emulated chip (default 4)")
      ->check(CLI::Range(2, 64));
  app.add_option("--out", out, "the description (default host.yaml)");
  app.add_option("--neighbour-out", neighbourOut,
                 "also the description with the rates of a neighbour's fresh data");
  app.add_option("--repeat", repeat, "runs per figure, the median kept (default 5)")
      ->check(CLI::Range(1, 100));
  int stepAttempts = trnccl::calibrate::kStepAttempts;
  app.add_option("--step-attempts", stepAttempts,
                 "runs of the step program at most while inconsistent with the copy rate (default "
                 "3)")
      ->check(CLI::Range(1, 10));
  int stepPause = trnccl::calibrate::kStepPauseSeconds;
  app.add_option("--step-pause", stepPause, "seconds between two runs of it (default 10)")
      ->check(CLI::Range(0, 600));
  app.add_option("--refit", refit,
                 "measure nothing: convert this description of an earlier calibration to the "
                 "current rules (refit.h), written to --out")
      ->check(CLI::ExistingFile);
  int cpus = static_cast<int>(usableCpus().size());
  app.add_option("--cpus", cpus,
                 "with --refit: the CPUs the earlier calibration ran on (default: this machine's)")
      ->check(CLI::Range(1, 4096));
  CLI11_PARSE(app, argc, argv);
  if (!refit.empty()) return trnccl::calibrate::refitFile(refit, out, cpus);
  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 1;
  const Rates big = measureRates(chips, repeat, kCopyBytes, kCopyBytes, mem);
  bool ok = big.ok();
  std::vector<Rates> bands;
  for (size_t ws = kFirstBand; ws <= kLastBand && ok; ws *= 2) {
    bands.push_back(measureRates(chips, repeat, ws / 2, ws / 3 / 64 * 64, mem));
    bands.back().workingSet = ws;
    ok = bands.back().ok();
  }
  // The slowest process's time per round of the token, per hop.
  const Spread hop = measure(
      chips, repeat, [chips](int i, Shared* s) { return passToken(i, s, chips); },
      [chips](double s) { return s / kTokenRounds / chips * 1e6; }, mem);
  munmap(mem, sizeof(Shared));
  if (!ok || !hop.ok) {
    std::fprintf(stderr, "trnccl-sim-calibrate: measurement failed\n");
    return 1;
  }
  // The library's own ring step, fitted; run again while far slower than its own copies allow.
  using trnccl::transport::shm::kDefaultZcopyBytes;
  namespace cal = trnccl::calibrate;
  cal::StepChoice choice;
  std::string error;
  const bool measured = cal::measureCheckedStep(chips, repeat, kDefaultZcopyBytes, stepAttempts,
                                                stepPause, choice, error);
  if (!measured) {
    std::fprintf(stderr, "trnccl-sim-calibrate: %s\n", error.c_str());
    return 1;
  }
  const cal::StepFit& step = choice.fit;
  const std::string kept = cal::describeChoice(choice);
  std::printf("step program: %s\n", kept.c_str());
  if (!cal::writeFile(out, describe(chips, big, bands, hop, step, false, kept))) return 1;
  if (!neighbourOut.empty() &&
      !cal::writeFile(neighbourOut, describe(chips, big, bands, hop, step, true, kept))) {
    return 1;
  }
  const Spread &copy = big.copy, &cross = big.cross, &red = big.reduce, &xred = big.crossReduce;
  std::printf(
      "copy %.2f GB/s per rank, a neighbour's data %.2f, reduce %.2f, a neighbour's data %.2f, "
      "hand-off %.2f us: %s (medians of %d; copy %.2f-%.2f, %.2f-%.2f, reduce %.2f-%.2f, "
      "%.2f-%.2f GB/s, hand-off %.2f-%.2f us)\n",
      copy.median, cross.median, red.median, xred.median, hop.median, out.c_str(), repeat, copy.low,
      copy.high, cross.low, cross.high, red.low, red.high, xred.low, xred.high, hop.low, hop.high);
  std::printf(
      "step %.2f us + %.4f us/KiB copied, %.2f us in place (fresh: %.2f us more): latency %.2f "
      "us, message %.2f us, call %.2f us (%.2f-%.2f; a ring step of the library:%s us); host "
      "threads %.2f us a round taken off (%.2f-%.2f)\n",
      step.fixedUs, step.usPerKiB, step.inPlaceUs, step.freshUs, linkLatencyUs(step, hop.median),
      messageUs(step, hop.median), callUs(step), step.call.lowUs, step.call.highUs,
      stepList(step).c_str(), step.host.us, step.host.lowUs, step.host.highUs);
  for (const Rates& b : bands) {
    std::printf(
        "  working set %9zu bytes: copy %.2f (%.2f-%.2f), neighbour's %.2f (%.2f-%.2f); reduce "
        "%.2f (%.2f-%.2f), neighbour's %.2f (%.2f-%.2f) GB/s\n",
        b.workingSet, b.copy.median, b.copy.low, b.copy.high, b.cross.median, b.cross.low,
        b.cross.high, b.reduce.median, b.reduce.low, b.reduce.high, b.crossReduce.median,
        b.crossReduce.low, b.crossReduce.high);
  }
  return 0;
}
