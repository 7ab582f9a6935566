#include "peers/peer_driver.h"

#include <fmt/format.h>
#include <fmt/printf.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/options.h"
#include "common/report.h"

namespace trnccl::perf::peers {
namespace {

std::string_view placementName(Placement p) {
  switch (p) {
    case Placement::kOutOfPlace:
      return "out-of-place";
    case Placement::kInPlace:
      return "in-place";
    case Placement::kSameBuffer:
      return "in-place (result at the start of the input buffer)";
  }
  return "";
}

class PeerBench {
 public:
  PeerBench(PeerGroup& group, const Options& o, const PeerCollective& coll)
      : group_(group),
        o_(o),
        coll_(coll),
        test_(*coll.test),
        n_(group.size()),
        main_(group.rank() == 0) {}

  int run(std::string_view library) {
    print(fmt::format("# {} {} benchmark ({} ranks, float sum)\n", library, coll_.call, n_));
    print(fmt::format("# placement: {}\n", placementName(coll_.placement)));
    print(fmt::sprintf("#\n# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count",
                       "type", "redop", "root", "time", "algbw", "busbw", "#wrong"));
    print(fmt::sprintf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "",
                       "", "", "(us)", "(GB/s)", "(GB/s)", ""));
    allocate();
    warmUp(o_.maxBytes);
    warmUp(o_.minBytes);
    for (size_t size : sizeSweep(o_)) timeSize(size);
    print(footerLines(errors_, avg_.mean(), coll_.name));
    return errors_ ? 1 : 0;
  }

 private:
  void print(const std::string& s) const {
    if (!main_) return;
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  }

  TestCase testCase(size_t bytes) const {
    TestCase tc;
    tc.key = DataKey{trncclFloat, trncclSum, n_, rep_};
    tc.counts = test_.counts(bytes / sizeof(float), n_);
    return tc;
  }

  void allocate() {
    const Counts c = testCase(o_.maxBytes).counts;
    const size_t last = size_t(n_ - 1);
    const size_t elems = std::max({c.send, c.recv, last * c.sendInplaceOffset + c.send,
                                   last * c.recvInplaceOffset + c.recv, size_t{1}});
    send_.assign(elems, 0);
    recv_.assign(elems, 0);
  }

  // The buffers of one call, with the *_perf in-place offsets.
  std::pair<float*, float*> buffers(const Counts& c) {
    if (coll_.placement == Placement::kOutOfPlace) return {send_.data(), recv_.data()};
    if (coll_.placement == Placement::kSameBuffer) return {recv_.data(), recv_.data()};
    const size_t rank = size_t(group_.rank());
    return {recv_.data() + rank * c.sendInplaceOffset, recv_.data() + rank * c.recvInplaceOffset};
  }

  PeerCall prepare(const Counts& c) {
    auto [send, recv] = buffers(c);
    return coll_.prepare(group_, send, recv, c);
  }

  void warmUp(size_t bytes) {
    const PeerCall call = prepare(testCase(bytes).counts);
    for (int i = 0; call && i < o_.warmupIters; ++i) call();
  }

  void timeSize(size_t bytes) {
    using Clock = std::chrono::steady_clock;
    TestCase tc = testCase(bytes);
    const PeerCall call = prepare(tc.counts);
    const std::string prefix =
        rowPrefix(rowBytes(tc.counts, sizeof(float)), tc.counts.param, "float", "sum", -1);
    if (!call) {
      print(prefix + rowBodyNotRun() + "\n");
      return;
    }
    group_.barrier();
    const auto start = Clock::now();
    for (int i = 0; i < o_.iters; ++i) call();
    double sec = std::chrono::duration<double>(Clock::now() - start).count() / o_.iters;
    sec = group_.sum(sec) / n_;
    const Bandwidth bw = rowBandwidth(test_, tc.counts, sizeof(float), sec, n_);
    int64_t wrong = 0;
    if (o_.check > 0) {
      tc.key.rep = ++rep_;
      wrong = int64_t(group_.sum(double(check(tc, call))));
    }
    errors_ += wrong;
    avg_.add(bw.busBw);
    print(prefix + rowBody(sec * 1e6, bw, o_.check > 0, wrong) + "\n");
  }

  // Fills this rank's input, runs the call once and counts wrong output elements.
  int64_t check(const TestCase& tc, const PeerCall& call) {
    const int rank = group_.rank();
    auto [send, recv] = buffers(tc.counts);
    std::fill(recv_.begin(), recv_.end(), NAN);
    std::vector<double> values(tc.counts.send);
    test_.input(tc, rank, 0, values);
    for (size_t i = 0; i < values.size(); ++i) send[i] = float(values[i]);
    call();
    std::vector<Expect> want(tc.counts.recv);
    if (!test_.expected(tc, rank, 0, want)) return 0;
    int64_t wrong = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::fabs(double(recv[i]) - want[i].value) <= want[i].tolerance) continue;
      if (wrong++ < 5) {
        std::fprintf(stderr, "# %s rank %d element %zu: got %.9g, expected %.9g\n",
                     std::string(coll_.name).c_str(), rank, i, double(recv[i]), want[i].value);
      }
    }
    return wrong;
  }

  PeerGroup& group_;
  const Options& o_;
  const PeerCollective& coll_;
  const CollectiveTest& test_;
  const int n_;
  const bool main_;
  std::vector<float> send_, recv_;
  int64_t errors_ = 0;
  int rep_ = 0;
  BusBwAverage avg_;
};

std::string names(std::span<const PeerCollective> collectives) {
  std::string s;
  for (const PeerCollective& c : collectives) s += fmt::format(" {}", c.name);
  return s;
}

// Why the options cannot be honoured, or "" when they can.
std::string unsupported(const Options& o) {
  if (o.types.size() != 1 || o.types[0] != trncclFloat) return "only -d float is supported";
  if (o.ops.size() != 1 || o.ops[0] != trncclSum) return "only -o sum is supported";
  if (o.gpus != 1) return "only -g 1 (one rank per process) is supported";
  if (o.average != 1) return "only -a 1 (average over ranks) is supported";
  if (o.blocking != 0 || o.timeoutSec != 0 || !o.jsonPath.empty())
    return "-z, -T, -J are not supported";
  return "";
}

}  // namespace

int runPeerBench(int argc, char** argv, std::string_view library, PeerGroup& group,
                 std::span<const PeerCollective> collectives) {
  const bool main = group.rank() == 0;
  const PeerCollective* chosen = nullptr;
  for (const PeerCollective& c : collectives) {
    if (argc >= 2 && c.name == argv[1]) chosen = &c;
  }
  if (!chosen) {
    if (main)
      std::fprintf(stderr, "usage: %s <collective> [nccl-tests flags]; collectives:%s\n", argv[0],
                   names(collectives).c_str());
    return 1;
  }
  const ParseResult parsed = parseOptions(argc - 1, argv + 1);
  std::string error = parsed.exitCode ? parsed.message : unsupported(parsed.options);
  if (!error.empty()) {
    if (main) std::fprintf(stderr, "%s: %s\n", argv[0], error.c_str());
    return parsed.exitCode.value_or(1);
  }
  PeerBench bench(group, parsed.options, *chosen);
  return bench.run(library);
}

}  // namespace trnccl::perf::peers
