// The shared driver of the *_perf benchmarks: nccl-tests' flow (warm up at the largest and the
// smallest size, then per size time n iterations out of place and in place, then check) and
// its exact output, around a CollectiveTest descriptor. Each process runs -t threads (the main
// thread is thread 0), each driving its own -g ranks.
#include <fmt/format.h>
#include <fmt/printf.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/collective.h"
#include "common/data_check.h"
#include "common/json_report.h"
#include "common/local_ranks.h"
#include "common/options.h"
#include "common/rank_layout.h"
#include "common/report.h"
#include "common/thread_team.h"
#include "common/world.h"

namespace trnccl::perf {
namespace {

constexpr const char* kTestsVersion = "0.1.0";

std::string hostName() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// What the -t threads of one process share: the run's settings, the rendezvous, and the
// communicators' unique id (absent when one trncclCommInitAll creates every rank).
struct Process {
  World& world;
  const Options& o;
  const CollectiveTest& test;
  const RankLayout layout;
  ThreadTeam team;
  std::optional<trncclUniqueId> id;
  std::mutex failing;  // the first thread to fail reports and ends the process
};

void print(bool main, const std::string& s) {
  if (!main) return;
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

// Lines before the table, printed by process 0 (every process's and thread's ranks gathered).
void printPreamble(Process& p) {
  const Options& o = p.o;
  const bool main = p.world.rank() == 0;
  if (main && !o.jsonPath.empty())
    print(main, fmt::format("# Writing JSON output to {}\n", o.jsonPath));
  int version = 0;
  check(trncclGetVersion(&version), "trncclGetVersion");
  std::string s =
      fmt::format("# trnccl-tests version {} trnccl-library={}\n", kTestsVersion, version);
  s += fmt::format("# Collective test starting: {}\n", p.test.name);
  s += fmt::sprintf(
      "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: %d unalign: %d\n",
      o.threads, o.gpus, long(o.minBytes), long(o.maxBytes),
      long(o.stepFactor > 1 ? o.stepFactor : o.stepBytes), o.stepFactor > 1 ? "factor" : "bytes",
      o.warmupIters, o.iters, 1, o.check, 0, 0);
  if (o.blocking == 1)
    s += "# Blocking Enabled: wait for completion and barrier after each collective \n";
  if (o.blocking > 1)
    s += "# Blocking Enabled: wait for completion after each collective (no barrier) \n";
  s += "#\n# Using devices\n";
  print(main, s);
  std::string mine;
  const std::string host = hostName();
  for (int t = 0; t < o.threads; ++t) {
    for (int g = 0; g < o.gpus; ++g) {
      mine += fmt::sprintf(
          "#  Rank %2d Group %2d Pid %6d on %10s device %2d [trnccl emulated NeuronCore]\n",
          p.layout.rank(p.world.rank(), t, g), 0, int(getpid()), host,
          p.layout.device(p.world.localRank(), t, g));
    }
  }
  for (const std::string& lines : p.world.gather(mine)) print(main, lines);
}

// One thread's benchmark: its -g ranks, the whole sweep, in step with the other threads and
// processes. Every thread computes the same reduced figures; thread 0 of process 0 prints them.
class Bench {
 public:
  Bench(Process& p, int thread, int argc, char** argv)
      : p_(p),
        world_(p.world),
        o_(p.o),
        test_(p.test),
        thread_(thread),
        nranks_(p.layout.nranks()),
        main_(world_.rank() == 0 && thread == 0),
        json_(argc, argv) {}

  int run() {
    const RankSlice slice{p_.layout.rank(world_.rank(), thread_, 0),
                          p_.layout.device(world_.localRank(), thread_, 0), o_.gpus, nranks_};
    ranks_ = std::make_unique<LocalRanks>(slice, bufferBytes(), o_.timeoutSec,
                                          p_.id ? &*p_.id : nullptr, o_.localRegister != 0);
    print(main_, headerLines());
    if (o_.rewriteSend) allocFresh();
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
    print(main_, footerLines(errors_, avg, test_.name));
    print(main_, "\n");
    if (main_ && !o_.jsonPath.empty()) json_.write(o_.jsonPath, o_, nranks_, errors_, avg);
    for (size_t i = 0; i < fresh_.size(); ++i) {
      trnrtSetDevice(ranks_->ranks()[i].device);
      trnrtFree(fresh_[i]);
    }
    ranks_.reset();
    return errors_ ? 1 : 0;
  }

  void abortComms() {
    if (ranks_) ranks_->abortAll();
  }

 private:
  // Thread barrier, then (thread 0) the processes' barrier: nccl-tests' Barrier().
  void barrier() {
    p_.team.sync(thread_, [this] { world_.barrier(); });
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

  // --rewrite_send: per local rank, a device buffer the calls never touch, copied over the send
  // buffer before each timed call (its zeros keep every reduction's operands finite).
  void allocFresh() {
    for (LocalRank& r : ranks_->ranks()) {
      check(trnrtSetDevice(r.device), "trnrtSetDevice");
      void* p = nullptr;
      check(trnrtMalloc(&p, ranks_->bufferBytes()), "trnrtMalloc(--rewrite_send)");
      fresh_.push_back(static_cast<char*>(p));
      check(trnrtMemset(p, 0, ranks_->bufferBytes()), "trnrtMemset");
    }
  }

  // rewrite: first a copy, in stream order, over the call's send buffer (--rewrite_send).
  void launchAll(const TestCase& tc, bool inPlace, bool rewrite = false) {
    size_t i = 0;
    for (LocalRank& r : ranks_->ranks()) {
      if (o_.gpus > 1) check(trnrtSetDevice(r.device), "trnrtSetDevice");
      const CallBuffers b = callBuffers(r, tc, inPlace);
      if (rewrite) {
        const size_t bytes = tc.counts.send * typeInfo(tc.key.type).size;
        check(trnrtMemcpyAsync(b.send, fresh_[i++], bytes, trnrtMemcpyDeviceToDevice, r.stream),
              "trnrtMemcpyAsync(--rewrite_send)");
      }
      // Timed: the message is formatted only on failure.
      const trncclResult_t result =
          test_.run(RunArgs{b.send, b.recv, tc, r.rank, r.comm, r.stream});
      if (result != trncclSuccess) {
        check(result, fmt::format("{} (rank {})", test_.call, r.rank), r.comm);
      }
    }
  }

  void warmUp(const TestCase& tc) {
    for (int i = 0; i < o_.warmupIters; ++i) launchAll(tc, false);
    ranks_->waitAll();
  }

  void timeTest(trncclDataType_t type, trncclRedOp_t op, int root) {
    barrier();
    warmUp(testCase(type, op, root, o_.maxBytes));
    warmUp(testCase(type, op, root, o_.minBytes));
    const TypeInfo& t = typeInfo(type);
    const std::string opText = test_.reduces ? std::string(opName(op)) : "none";
    for (size_t size : sizeSweep(o_)) {
      TestCase tc = testCase(type, op, root, size);
      JsonRow row{
          rowBytes(tc.counts, t.size), tc.counts.param, std::string(t.name), opText, root, {}, {}};
      print(main_, rowPrefix(row.size, row.count, row.type, row.redop, root));
      row.outOfPlace = benchTime(tc, false);
      if (test_.inPlace) {
        row.inPlace = benchTime(tc, true);
      } else {
        print(main_, rowBodyNotRun());
      }
      print(main_, "\n");
      if (main_) json_.addRow(std::move(row));
    }
  }

  JsonHalf benchTime(TestCase& tc, bool inPlace) {
    using Clock = std::chrono::steady_clock;
    barrier();
    const auto start = Clock::now();
    for (int i = 0; i < o_.iters; ++i) {
      launchAll(tc, inPlace, o_.rewriteSend != 0);
      if (o_.blocking == 1 || o_.blocking == 2) ranks_->waitAll();
      if (o_.blocking == 1) barrier();
    }
    ranks_->waitAll();
    if (o_.blocking == 3) barrier();
    double sec = std::chrono::duration<double>(Clock::now() - start).count() / o_.iters;
    sec = p_.team.reduceTime(thread_, sec, TimeAverage(o_.average), world_);
    const Bandwidth bw = rowBandwidth(test_, tc.counts, typeInfo(tc.key.type).size, sec, nranks_);

    int64_t wrong = 0;
    for (int c = 0; c < o_.check; ++c) {
      tc.key.rep = ++rep_;  // the same sequence in every thread and process
      initData(test_, tc, inPlace, *ranks_);
      launchAll(tc, inPlace);
      ranks_->waitAll();
      wrong = p_.team.sum(thread_, countWrong(test_, tc, inPlace, *ranks_), world_);
      if (wrong) break;
    }
    errors_ += wrong;
    avg_.add(bw.busBw);
    print(main_, rowBody(sec * 1e6, bw, o_.check > 0, wrong));
    return JsonHalf{sec * 1e6, bw.algBw, bw.busBw, o_.check > 0, wrong};
  }

  Process& p_;
  World& world_;
  const Options& o_;
  const CollectiveTest& test_;
  const int thread_;
  const int nranks_;
  const bool main_;
  std::unique_ptr<LocalRanks> ranks_;
  std::vector<char*> fresh_;  // --rewrite_send's sources, one per local rank
  int64_t errors_ = 0;
  int rep_ = 0;
  BusBwAverage avg_;
  JsonReport json_;  // filled and written by the main thread only
};

// A Failure in any thread ends the process: the first failing thread reports it, breaks the
// team (the others stop waiting) and aborts its communicators so that no peer waits on them,
// then ends the run without tearing down what other threads may still use. The main thread
// ends every process with MPI_Abort; another thread may not call MPI (MPI_THREAD_FUNNELED) and
// exits, which mpirun treats as a failed job and ends the other processes.
[[noreturn]] void fail(Process& p, int thread, Bench* bench, const Failure& f) {
  std::lock_guard once(p.failing);  // later failures (often "another thread failed") wait here
  std::fflush(stdout);
  std::fprintf(stderr, "%s: %s: %s\n", hostName().c_str(), std::string(p.test.name).c_str(),
               f.what());
  std::fflush(stderr);
  p.team.fail();
  if (bench) bench->abortComms();
  std::fflush(stdout);
  if (thread == 0 && p.world.usesMpi()) p.world.abort(1);
  std::_Exit(1);
}

// Thread `thread`'s whole run; returns its exit status or ends the process on a failure.
int runThread(Process& p, int thread, int argc, char** argv) {
  std::unique_ptr<Bench> bench;
  try {
    bench = std::make_unique<Bench>(p, thread, argc, argv);
    return bench->run();
  } catch (const Failure& f) {
    fail(p, thread, bench.get(), f);
  }
}

}  // namespace

int runPerf(int argc, char** argv, const CollectiveTest& test) {
  World world(&argc, &argv);
  const ParseResult parsed = parseOptions(argc, argv);
  if (parsed.exitCode) {
    if (world.rank() == 0) std::fputs(parsed.message.c_str(), *parsed.exitCode ? stderr : stdout);
    return *parsed.exitCode;
  }
  const Options& o = parsed.options;
  Process p{world,
            o,
            test,
            RankLayout{world.size(), o.threads, o.gpus},
            ThreadTeam(o.threads, o.timeoutSec),
            std::nullopt,
            {}};
  try {
    printPreamble(p);
    if (test.rooted && o.root >= p.layout.nranks()) {
      throw Failure(fmt::format("invalid root {} for {} ranks", o.root, p.layout.nranks()));
    }
    // One process with one thread creates every rank with trncclCommInitAll; otherwise ranks
    // join by trncclCommInitRank with process 0's unique id.
    if (world.usesMpi() || o.threads > 1) {
      trncclUniqueId id{};
      if (world.rank() == 0) check(trncclGetUniqueId(&id), "trncclGetUniqueId");
      world.broadcast(&id, sizeof(id), 0);
      p.id = id;
    }
  } catch (const Failure& f) {
    fail(p, 0, nullptr, f);
  }
  // Threads 1.. run beside the main thread, which is thread 0 and the only one calling MPI.
  std::vector<std::thread> others;
  for (int t = 1; t < o.threads; ++t) {
    others.emplace_back([&p, t, argc, argv] { runThread(p, t, argc, argv); });
  }
  const int status = runThread(p, 0, argc, argv);
  for (std::thread& t : others) t.join();
  return status;
}

}  // namespace trnccl::perf
