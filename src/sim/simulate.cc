#include "sim/simulate.h"

#include <algorithm>

#include "algorithms/registry.h"
#include "algorithms/ring_steps.h"

namespace trnccl::sim {
namespace {

// Where the simulated buffers "are": addresses no schedule dereferences here, distinct so that
// an out-of-place call looks out of place to the builders, below the scratch space.
constexpr uintptr_t kSendBase = uintptr_t{1} << 44;
constexpr uintptr_t kRecvBase = uintptr_t{1} << 45;

}  // namespace

const algorithms::Algorithm* findAlgorithm(algorithms::Collective coll, const std::string& name) {
  for (const algorithms::Algorithm* a : algorithms::algorithmsFor(coll)) {
    if (name == a->name) return a;
  }
  return nullptr;
}

Result<Simulator> Simulator::create(const plan::TopologyView& view, const EngineOptions& options) {
  if (!view.topology || !view.layout)
    return invalidArgument("the topology view has no description");
  auto fabric = Fabric::build(*view.topology, *view.layout);
  if (!fabric) return fabric.status();
  Simulator s;
  s.view_ = view;
  s.fabric_ = std::make_shared<const Fabric>(std::move(*fabric));
  s.options_ = options;
  return s;
}

// One set of the pool's tables, for the length of a call.
class Simulator::Lease {
 public:
  explicit Lease(TablePool& pool) : pool_(pool) {
    std::lock_guard<std::mutex> lock(pool_.mu);
    if (pool_.idle.empty()) {
      tables_ = std::make_unique<ProgramTables>();
    } else {
      tables_ = std::move(pool_.idle.back());
      pool_.idle.pop_back();
    }
  }
  ~Lease() {
    std::lock_guard<std::mutex> lock(pool_.mu);
    pool_.idle.push_back(std::move(tables_));
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ProgramTables* get() const { return tables_.get(); }

 private:
  TablePool& pool_;
  std::unique_ptr<ProgramTables> tables_;
};

Result<Outcome> Simulator::schedules(const std::function<schedule::Schedule(int)>& build,
                                     Recorder* recorder) const {
  Lease tables(*tables_);
  Program program(*fabric_, tables.get());
  for (int r = 0; r < nranks(); ++r) TRN_TRY(program.add(r, build(r)));
  return run(program, options_, recorder);
}

Result<Outcome> Simulator::pointToPoint(int rank,
                                        const std::vector<algorithms::p2p::Op>& ops) const {
  const int n = nranks();
  for (const auto& op : ops) {
    if (op.peer < 0 || op.peer >= n) return invalidArgument("peer {} is not a rank", op.peer);
  }
  return schedules([&](int r) {
    if (r == rank) return algorithms::p2p::batch(ops, rank, n);
    std::vector<algorithms::p2p::Op> mirror;
    for (const auto& op : ops) {
      if (op.peer == r && r != rank) {
        mirror.push_back({.send = !op.send, .peer = rank, .count = op.count, .type = op.type});
      }
    }
    return algorithms::p2p::batch(mirror, r, n);
  });
}

Result<CollectiveRun> Simulator::collective(algorithms::CollArgs args,
                                            const algorithms::Algorithm* algorithm, int channels,
                                            Recorder* recorder) const {
  args.nranks = nranks();
  args.rank = 0;
  args.shape = view_.shape;
  // Built on the model's links, as plan::plan builds the library's schedules: a builder that
  // picks a variant by the cost model (the hierarchy's inter-instance step) picks the library's.
  args.links = &view_.links;
  args.send = reinterpret_cast<const void*>(kSendBase);
  args.recv = reinterpret_cast<void*>(kRecvBase);
  CollectiveRun out;
  if (algorithm == nullptr) {
    auto c = plan::choose(args, view_.links);
    if (!c) return c.status();
    algorithm = c->algorithm;
    if (channels <= 0) channels = c->channels;
  }
  if (!algorithm->supports(args)) {
    return invalidArgument("{} {} declines this call", algorithms::collectiveName(args.coll),
                           algorithm->name);
  }
  if (!algorithm->usesChannels) {
    args.channels = 1;
  } else if (channels > 0) {
    const int usable =
        static_cast<int>(algorithms::channelRings(args.shape.get(), args.nranks).size());
    args.channels = std::min(channels, usable);
  } else {
    args.channels = plan::chooseChannels(*algorithm, args, view_.links);
  }
  out.choice = plan::Choice{algorithm, algorithm->estimate(args, view_.links), args.channels};
  args.channels = out.choice.channels;
  const algorithms::Algorithm& algo = *out.choice.algorithm;
  auto outcome = schedules(
      [&](int rank) {
        algorithms::CollArgs a = args;
        a.rank = rank;
        return algo.build(a);
      },
      recorder);
  if (!outcome) return outcome.status();
  out.outcome = std::move(*outcome);
  return out;
}

}  // namespace trnccl::sim
