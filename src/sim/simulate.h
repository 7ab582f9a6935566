// trnccl-sim's front: a call of a communicator on a modelled topology, simulated with the
// library's own schedules. Every rank's schedule comes from the algorithm's own builder (the
// one the tuner picks, or one named), with the tuner's channel count; the schedules are compiled
// rank by rank (program.h) and run by the engine (engine.h) on the fabric of the description
// (fabric.h). Nothing here implements an algorithm or knows one by name.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/p2p/batch.h"
#include "common/status.h"
#include "plan/planner.h"
#include "plan/topology_view.h"
#include "sim/engine.h"
#include "sim/program.h"
#include "topology/fabric_model.h"

namespace trnccl::sim {

struct CollectiveRun {
  plan::Choice choice;  // algorithm, channels and the tuner's estimate of them
  Outcome outcome;
};

class Simulator {
 public:
  static Result<Simulator> create(const plan::TopologyView& view,
                                  const EngineOptions& options = {});

  const plan::TopologyView& view() const { return view_; }
  const Fabric& fabric() const { return *fabric_; }
  int nranks() const { return fabric_->nranks(); }

  // The call `args` (coll, count, type, op, root, sliceBytes; rank, nranks, shape and buffers
  // are the simulator's) on every rank. algorithm null: the tuner's choice (TRNCCL_ALGO
  // applies); channels 0: the tuner's count for the algorithm, else at most that many (for an
  // algorithm that uses channels). Error when the algorithm declines the call.
  Result<CollectiveRun> collective(algorithms::CollArgs args,
                                   const algorithms::Algorithm* algorithm = nullptr,
                                   int channels = 0, Recorder* recorder = nullptr) const;

  // Any schedules: build(rank) is rank's (e.g. a group's sends and receives).
  Result<Outcome> schedules(const std::function<schedule::Schedule(int rank)>& build,
                            Recorder* recorder = nullptr) const;

  // One rank's sends and receives of a group (algorithms/p2p/batch.h), each peer posting the
  // matching operations in the same order, as a correct program's peers do.
  Result<Outcome> pointToPoint(int rank, const std::vector<algorithms::p2p::Op>& ops) const;

 private:
  // The tables a call's Program leaves to the next (program.h): one set per call running at
  // once, each taken by a call and given back at its end.
  struct TablePool {
    std::mutex mu;
    std::vector<std::unique_ptr<ProgramTables>> idle;
  };
  class Lease;

  plan::TopologyView view_;
  std::shared_ptr<const Fabric> fabric_;
  EngineOptions options_;
  std::shared_ptr<TablePool> tables_ = std::make_shared<TablePool>();
};

// The descriptor of `name` for args.coll, or null.
const algorithms::Algorithm* findAlgorithm(algorithms::Collective coll, const std::string& name);

}  // namespace trnccl::sim
