#include "sweep.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include "algorithms/p2p/batch.h"
#include "algorithms/registry.h"
#include "common/data.h"
#include "common/options.h"
#include "common/report.h"
#include "sim/trace.h"
#include "topology/loader.h"

namespace trnccl::simtool {
namespace {

using algorithms::Collective;

bool isSendRecv(const std::string& coll) { return coll == "sendrecv"; }

Collective collectiveOf(const std::string& name) {
  for (Collective c : algorithms::kCollectives) {
    if (name == algorithms::collectiveName(c)) return c;
  }
  return Collective::kAllReduce;
}

// Per-rank collectives take the count of one rank's block (nccl-tests' size is the whole).
bool perRankCount(const std::string& coll) {
  return coll == "allgather" || coll == "reducescatter" || coll == "alltoall";
}

double busFactor(const std::string& coll, int n) {
  if (coll == "allreduce") return perf::allReduceBusFactor(n);
  if (perRankCount(coll)) return perf::gatherBusFactor(n);
  return perf::unitBusFactor(n);
}

std::vector<size_t> sizes(const Options& o) {
  perf::Options p;
  p.minBytes = o.minBytes;
  p.maxBytes = o.maxBytes;
  p.stepFactor = o.stepFactor;
  p.stepBytes = o.stepBytes > 0 ? o.stepBytes : 1;
  return perf::sizeSweep(p);
}

sim::Outcome sendRecv(const sim::Simulator& sim, size_t count, trncclDataType_t type,
                      sim::Recorder* rec, Status& error) {
  const int n = sim.nranks();
  auto outcome = sim.schedules(
      [&](int r) {
        const auto t = static_cast<device::DataType>(type);
        std::vector<algorithms::p2p::Op> ops{
            {.send = true, .peer = (r + 1) % n, .count = count, .type = t},
            {.send = false, .peer = (r + n - 1) % n, .count = count, .type = t}};
        return algorithms::p2p::batch(n > 1 ? ops : std::vector<algorithms::p2p::Op>{}, r, n);
      },
      rec);
  if (!outcome) {
    error = outcome.status();
    return {};
  }
  return *outcome;
}

algorithms::CollArgs callArgs(const Options& o, const Setup& setup, size_t count) {
  algorithms::CollArgs args;
  args.coll = collectiveOf(setup.coll);
  args.count = count;
  args.type = static_cast<device::DataType>(o.type);
  args.op = static_cast<device::RedOp>(o.op);
  args.root = o.root;
  args.sliceBytes = o.sliceBytes;
  args.nranks = setup.simulator.nranks();
  args.shape = setup.simulator.view().shape;
  return args;
}

// One call of `group` ("tuner" or an algorithm's name) at `count`.
Result<Cell> simulate(const Options& o, const Setup& setup, const std::string& group, size_t count,
                      sim::Recorder* rec, std::atomic<uint64_t>& steps) {
  const sim::Simulator& sim = setup.simulator;
  if (isSendRecv(setup.coll)) {
    Status error;
    sim::Outcome out = sendRecv(sim, count, o.type, rec, error);
    if (!error) return error;
    steps += out.steps;
    return Cell{true, "p2p", 1, out.timeUs, 0, 0, 0};
  }
  const algorithms::CollArgs args = callArgs(o, setup, count);
  const algorithms::Algorithm* algo = nullptr;
  if (group != "tuner") {
    algo = sim::findAlgorithm(args.coll, group);
    if (algo == nullptr)
      return invalidArgument("no {} algorithm is called '{}'", setup.coll, group);
    if (!algo->supports(args)) return Cell{};  // declined: not run
  }
  auto run = sim.collective(args, algo, o.channels, rec);
  if (!run) return run.status();
  steps += run->outcome.steps;
  return Cell{true,
              run->choice.algorithm->name,
              run->choice.channels,
              run->outcome.timeUs,
              run->choice.estimateUs,
              0,
              0};
}

// Runs task(i) for i in [0, count) on `jobs` threads; the first error wins.
Status parallelFor(size_t count, int jobs, const std::function<Status(size_t)>& task) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first;
  auto worker = [&] {
    for (size_t i; (i = next++) < count;) {
      Status s = task(i);
      std::lock_guard<std::mutex> lock(mu);
      if (!s && first.isOk()) first = s;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < jobs; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  return first;
}

}  // namespace

std::string withChannels(const std::string& algorithm, int channels) {
  return channels > 1 ? fmt::format("{}x{}", algorithm, channels) : algorithm;
}

Result<Setup> prepare(const Options& o) {
  auto topo = topology::loadTopology(o.topology);
  if (!topo) return topo.status();
  const int perInstance = topo->ranksPerInstance();
  const int instances = o.instances > 0 ? o.instances : topo->instances;
  const int capacity = instances * perInstance;
  const int nranks = o.ranks > 0 ? o.ranks : capacity;
  if (nranks > capacity) {
    return invalidArgument("--ranks {} do not fit {} instance(s) of {} ({} ranks each)", nranks,
                           instances, topo->name, perInstance);
  }
  if (o.root >= nranks)
    return invalidArgument("--root {} is not a rank (0..{})", o.root, nranks - 1);
  auto view = plan::viewTopology(*topo, nranks);
  if (!view) return view.status();
  sim::EngineOptions engine;
  engine.pieceBytes = o.pieceBytes;
  engine.eagerBytes = o.eagerBytes.value_or(4 * o.sliceBytes);
  auto simulator = sim::Simulator::create(*view, engine);
  if (!simulator) return simulator.status();
  return Setup{std::move(*simulator), o.coll};
}

Result<Sweep> runSweep(const Options& o, const Setup& setup) {
  Sweep sw;
  const sim::Simulator& sim = setup.simulator;
  const int n = sw.nranks = sim.nranks();
  const auto& layout = sim.fabric().layout();
  const perf::TypeInfo& type = perf::typeInfo(o.type);
  sw.title = fmt::format("{} x {} instance(s), {} ranks ({} per instance), {}, {}, {}",
                         sim.view().name, layout.instances, n, layout.ranksPerInstance, setup.coll,
                         type.name, perf::opName(o.op));
  if (isSendRecv(setup.coll)) {
    sw.groups = {"p2p"};
  } else if (o.algo == "all") {
    for (const algorithms::Algorithm* a : algorithms::algorithmsFor(collectiveOf(setup.coll))) {
      sw.groups.push_back(a->name);
    }
  } else {
    sw.groups = {o.algo.empty() ? "tuner" : o.algo};
  }
  const size_t per = perRankCount(setup.coll) ? static_cast<size_t>(n) : 1;
  for (size_t bytes : sizes(o)) {
    Row row;
    row.count = bytes / type.size / per;
    row.bytes = row.count * type.size * per;
    row.cells.resize(sw.groups.size());
    if (!isSendRecv(setup.coll)) {
      auto c = plan::choose(callArgs(o, setup, row.count), sim.view().links);
      if (c) row.tunerPick = withChannels(c->algorithm->name, c->channels);
    }
    sw.rows.push_back(std::move(row));
  }
  const auto start = std::chrono::steady_clock::now();
  std::atomic<uint64_t> steps{0};
  const size_t groups = sw.groups.size();
  // Largest sizes first: the costliest calls start while every thread has work left (the last
  // to finish is then a short one), and the thread's tables grow to their largest at once
  // instead of being mapped afresh as the sizes grow.
  const size_t tasks = sw.rows.size() * groups;
  TRN_TRY(parallelFor(tasks, o.jobs, [&](size_t reversed) -> Status {
    const size_t task = tasks - 1 - reversed;
    Row& row = sw.rows[task / groups];
    auto cell = simulate(o, setup, sw.groups[task % groups], row.count, nullptr, steps);
    if (!cell) return cell.status();
    if (cell->ran && cell->timeUs > 0) {
      const perf::Bandwidth bw =
          perf::bandwidth(row.bytes, cell->timeUs * 1e-6, busFactor(setup.coll, n));
      cell->algBw = bw.algBw;
      cell->busBw = bw.busBw;
    }
    row.cells[task % groups] = *cell;
    return Status::ok();
  }));
  for (Row& row : sw.rows) {
    for (size_t g = 0; g < groups; ++g) {
      const Cell& c = row.cells[g];
      if (c.ran && (row.bestGroup < 0 || c.timeUs < row.cells[row.bestGroup].timeUs)) {
        row.bestGroup = static_cast<int>(g);
      }
    }
  }
  sw.steps = steps;
  sw.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return sw;
}

Status writeTrace(const Options& o, const Setup& setup) {
  const auto all = sizes(o);
  const size_t bytes = all.empty() ? o.maxBytes : all.back();
  const perf::TypeInfo& type = perf::typeInfo(o.type);
  const int n = setup.simulator.nranks();
  const size_t count = bytes / type.size / (perRankCount(setup.coll) ? static_cast<size_t>(n) : 1);
  const std::string group = o.algo.empty() || o.algo == "all" ? "tuner" : o.algo;
  sim::Recorder rec;
  std::atomic<uint64_t> steps{0};
  auto cell = simulate(o, setup, group, count, &rec, steps);
  if (!cell) return cell.status();
  if (!cell->ran) return invalidArgument("--trace: {} declines the call", group);
  const std::string title =
      fmt::format("{} {} bytes, {} ({} ranks): {:.1f} us", setup.coll, bytes,
                  withChannels(cell->algorithm, cell->channels), n, cell->timeUs);
  TRN_TRY(sim::writeChromeTrace(rec, setup.simulator.fabric(), title, o.trace));
  if (rec.dropped > 0) {
    fmt::print(stderr,
               "trnccl-sim: the trace keeps the first {} steps and transfers; {} more left out\n",
               rec.limit, rec.dropped);
  }
  return Status::ok();
}

}  // namespace trnccl::simtool
