// The shared driver of the *_perf benchmarks: nccl-tests' flow (warm up at the largest and the
// smallest size, then per size time n iterations out of place and in place, then check) and
// its exact output, around a CollectiveTest descriptor.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <fmt/printf.h>

#include "common/collective.h"
#include "common/data_check.h"
#include "common/json_report.h"
#include "common/local_ranks.h"
#include "common/options.h"
#include "common/report.h"
#include "common/world.h"

namespace trnccl::perf {
namespace {

constexpr const char* kTestsVersion = "0.1.0";

std::string hostName() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

class Bench {
 public:
  Bench(World& world, const Options& o, const CollectiveTest& test, int argc, char** argv)
      : world_(world), o_(o), test_(test), nranks_(world.size() * o.gpus),
        main_(world.rank() == 0), json_(argc, argv) {}

  int run() {
    if (main_ && !o_.jsonPath.empty()) print(fmt::format("# Writing JSON output to {}\n", o_.jsonPath));
    printPreamble();
    if (test_.rooted && o_.root >= nranks_) {
      throw Failure(fmt::format("invalid root {} for {} ranks", o_.root, nranks_));
    }
    ranks_ = std::make_unique<LocalRanks>(world_, o_.gpus, bufferBytes(), o_.timeoutSec);
    print(headerLines());
    const std::vector<trncclRedOp_t> ops = test_.reduces ? o_.ops : std::vector{trncclSum};
    std::vector<int> roots{-1};
    if (test_.rooted) {
      roots = {o_.root};
      if (o_.root < 0) {
        roots.clear();
        for (int r = 0; r < nranks_; ++r) roots.push_back(r);
      }
    }
    for (trncclDataType_t type : o_.types) {
      for (trncclRedOp_t op : ops) {
        for (int root : roots) timeTest(type, op, root);
      }
    }
    const double avg = avg_.mean();
    print(footerLines(errors_, avg, test_.name));
    print("\n");
    if (main_ && !o_.jsonPath.empty()) json_.write(o_.jsonPath, o_, nranks_, errors_, avg);
    ranks_.reset();
    return errors_ ? 1 : 0;
  }

  void abortComms() {
    if (ranks_) ranks_->abortAll();
  }

 private:
  void print(const std::string& s) const {
    if (!main_) return;
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  }

  void printPreamble() {
    int version = 0;
    check(trncclGetVersion(&version), "trncclGetVersion");
    std::string s = fmt::format("# trnccl-tests version {} trnccl-library={}\n", kTestsVersion, version);
    s += fmt::format("# Collective test starting: {}\n", test_.name);
    s += fmt::sprintf(
        "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d "
        "agg iters: %d validation: %d graph: %d unalign: %d\n",
        o_.threads, o_.gpus, long(o_.minBytes), long(o_.maxBytes),
        long(o_.stepFactor > 1 ? o_.stepFactor : o_.stepBytes),
        o_.stepFactor > 1 ? "factor" : "bytes", o_.warmupIters, o_.iters, 1, o_.check, 0, 0);
    if (o_.blocking == 1) s += "# Blocking Enabled: wait for completion and barrier after each collective \n";
    if (o_.blocking > 1) s += "# Blocking Enabled: wait for completion after each collective (no barrier) \n";
    s += "#\n# Using devices\n";
    print(s);
    std::string mine;
    const std::string host = hostName();
    for (int i = 0; i < o_.gpus; ++i) {
      mine += fmt::sprintf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [trnccl emulated NeuronCore]\n",
                           world_.rank() * o_.gpus + i, 0, int(getpid()), host,
                           world_.localRank() * o_.gpus + i);
    }
    for (const std::string& lines : world_.gather(mine)) print(lines);
  }

  // Bytes each device buffer needs for the largest size of every type, in place included.
  size_t bufferBytes() const {
    size_t bytes = 64;
    for (trncclDataType_t type : o_.types) {
      const size_t ts = typeInfo(type).size;
      const Counts c = test_.counts(o_.maxBytes / ts, nranks_);
      const size_t last = size_t(nranks_ - 1);
      const size_t elems = std::max({c.send, c.recv, last * c.sendInplaceOffset + c.send,
                                     last * c.recvInplaceOffset + c.recv});
      bytes = std::max(bytes, elems * ts);
    }
    return bytes;
  }

  TestCase testCase(trncclDataType_t type, trncclRedOp_t op, int root, size_t bytes) const {
    TestCase tc;
    tc.key = DataKey{type, op, nranks_, rep_};
    tc.root = root;
    tc.counts = test_.counts(bytes / typeInfo(type).size, nranks_);
    return tc;
  }

  void launchAll(const TestCase& tc, bool inPlace) {
    for (LocalRank& r : ranks_->ranks()) {
      if (o_.gpus > 1) check(trnrtSetDevice(r.device), "trnrtSetDevice");
      const CallBuffers b = callBuffers(r, tc, inPlace);
      check(test_.run(RunArgs{b.send, b.recv, tc, r.rank, r.comm, r.stream}),
            fmt::format("{} (rank {})", test_.call, r.rank), r.comm);
    }
  }

  void warmUp(const TestCase& tc) {
    for (int i = 0; i < o_.warmupIters; ++i) launchAll(tc, false);
    ranks_->waitAll();
  }

  void timeTest(trncclDataType_t type, trncclRedOp_t op, int root) {
    world_.barrier();
    warmUp(testCase(type, op, root, o_.maxBytes));
    warmUp(testCase(type, op, root, o_.minBytes));
    const TypeInfo& t = typeInfo(type);
    const std::string opText = test_.reduces ? std::string(opName(op)) : "none";
    for (size_t size : sizeSweep(o_)) {
      TestCase tc = testCase(type, op, root, size);
      JsonRow row{rowBytes(tc.counts, t.size), tc.counts.param,
                  std::string(t.name), opText, root, {}, {}};
      print(rowPrefix(row.size, row.count, row.type, row.redop, root));
      row.outOfPlace = benchTime(tc, false);
      if (test_.inPlace) {
        row.inPlace = benchTime(tc, true);
      } else {
        print(rowBodyNotRun());
      }
      print("\n");
      json_.addRow(std::move(row));
    }
  }

  JsonHalf benchTime(TestCase& tc, bool inPlace) {
    using Clock = std::chrono::steady_clock;
    world_.barrier();
    const auto start = Clock::now();
    for (int i = 0; i < o_.iters; ++i) {
      launchAll(tc, inPlace);
      if (o_.blocking == 1 || o_.blocking == 2) ranks_->waitAll();
      if (o_.blocking == 1) world_.barrier();
    }
    ranks_->waitAll();
    if (o_.blocking == 3) world_.barrier();
    double sec = std::chrono::duration<double>(Clock::now() - start).count() / o_.iters;
    sec = world_.reduceTime(sec, TimeAverage(o_.average));
    const Bandwidth bw =
        rowBandwidth(test_, tc.counts, typeInfo(tc.key.type).size, sec, nranks_);

    int64_t wrong = 0;
    for (int c = 0; c < o_.check; ++c) {
      tc.key.rep = ++rep_;  // the same sequence in every process
      initData(test_, tc, inPlace, *ranks_);
      launchAll(tc, inPlace);
      ranks_->waitAll();
      wrong = world_.sum(countWrong(test_, tc, inPlace, *ranks_));
      if (wrong) break;
    }
    errors_ += wrong;
    avg_.add(bw.busBw);
    print(rowBody(sec * 1e6, bw, o_.check > 0, wrong));
    return JsonHalf{sec * 1e6, bw.algBw, bw.busBw, o_.check > 0, wrong};
  }

  World& world_;
  const Options& o_;
  const CollectiveTest& test_;
  const int nranks_;
  const bool main_;
  std::unique_ptr<LocalRanks> ranks_;
  int64_t errors_ = 0;
  int rep_ = 0;
  BusBwAverage avg_;
  JsonReport json_;
};

}  // namespace

int runPerf(int argc, char** argv, const CollectiveTest& test) {
  World world(&argc, &argv);
  const ParseResult parsed = parseOptions(argc, argv);
  if (parsed.exitCode) {
    if (world.rank() == 0) std::fputs(parsed.message.c_str(), *parsed.exitCode ? stderr : stdout);
    return *parsed.exitCode;
  }
  Bench bench(world, parsed.options, test, argc, argv);
  try {
    return bench.run();
  } catch (const Failure& f) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s: %s\n", hostName().c_str(), std::string(test.name).c_str(),
                 f.what());
    std::fflush(stderr);
    // Stop the communicators so that no peer waits on this process, then end the run without
    // tearing down what may still be in use.
    bench.abortComms();
    std::fflush(stdout);
    if (world.usesMpi()) world.abort(1);
    std::_Exit(1);
  }
}

}  // namespace trnccl::perf
