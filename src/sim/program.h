// Every rank's schedule of one call, compiled for the engine: steps reduced to what timing needs
// (primitive, bytes, the directed connections they receive and send on), and the connections
// with their routes on the fabric. Built rank by rank, so a caller can drop each Schedule once
// added: at 2,048 ranks the schedules themselves would not fit.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "schedule/schedule.h"
#include "sim/huge_pages.h"
#include "topology/fabric_model.h"

namespace trnccl::sim {

using Fabric = topology::FabricModel;
using topology::Resource;
using Route = topology::Path;

// The largest step the engine carries (its messages keep their size in 48 bits): 256 TiB.
constexpr uint64_t kMaxStepBytes = (uint64_t{1} << 48) - 1;

struct SimStep {
  enum Flags : uint8_t {
    kLastOfGroup = 1,  // the next step starts a new group
    kReduces = 2,      // combines what it receives with a local operand
    kSyncSend = 4,     // over only once the peer received it
    kMovesData = 8,    // a local copy whose source and destination differ, or a local reduction
  };
  uint64_t bytes = 0;
  int32_t recvConn = -1;   // connection it receives on, -1 if none
  int32_t sendConn = -1;   // connection it sends on, -1 if none
  int32_t sendConn2 = -1;  // a duplicated write's second destination, -1 if none
  schedule::Primitive prim = schedule::Primitive::kCopy;
  uint8_t flags = 0;
};

// One direction between two ranks, and the route it crosses (Program::route(): routes are
// shared, as a large mesh has millions of connections and far fewer distinct routes).
struct Connection {
  int32_t from = 0, to = 0;
  uint32_t route = 0;
};

class Program {
 public:
  explicit Program(const Fabric& fabric);
  ~Program();  // leaves its largest tables to the thread's next Program
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // Compiles rank's schedule (ranks in any order, each once).
  Status add(int rank, const schedule::Schedule& s);

  int nranks() const { return static_cast<int>(first_.size()); }
  // Rank r's steps are steps()[first(r), first(r + 1)) (ranks never added have none).
  using Steps = std::vector<SimStep, HugePageAllocator<SimStep>>;
  const Steps& steps() const { return steps_; }
  uint32_t first(int rank) const;
  uint32_t end(int rank) const;
  const std::vector<Connection>& connections() const { return conns_; }
  const Route& route(int32_t conn) const {
    return routes_[conns_[static_cast<size_t>(conn)].route];
  }
  // Messages the schedules send (a duplicated write counts twice).
  uint64_t sends() const { return sends_; }
  const Fabric& fabric() const { return fabric_; }
  // Name of the algorithm the schedules came from (the first added).
  const std::string& algorithm() const { return algorithm_; }
  // The call's working set, when the fabric's rates depend on it (Fabric::hasBands; else 0):
  // the largest over the ranks of the bytes of buffer memory a rank's steps read or write (the
  // union of their local operands and destinations, scratch included; what a transfer reads
  // in place from a peer belongs to the peer's).
  uint64_t workingSet() const { return workingSet_; }
  const std::vector<Route>& routes() const { return routes_; }

 private:
  Result<int32_t> connection(int from, int to);
  int32_t* findSlot(uint64_t key);
  uint32_t routeId(const Route& r);

  const Fabric& fabric_;
  std::string algorithm_;
  Steps steps_;
  std::vector<uint32_t> first_, count_;
  std::vector<Connection> conns_;
  std::vector<Route> routes_;
  std::vector<uint32_t> routeSlots_;  // open addressing on the hops: route id + 1 (0: empty)
  uint64_t sends_ = 0;
  uint64_t workingSet_ = 0;
  // (from, to) -> connection index + 1 (0: none yet): a table of every pair up to kDenseRanks
  // ranks (64 MiB at 4,096), else open addressing on from * nranks + to + 1 (0: empty).
  static constexpr int kDenseRanks = 4096;
  std::vector<int32_t> dense_;
  std::vector<uint64_t> keys_;
  std::vector<int32_t> values_;
  size_t used_ = 0;
};

}  // namespace trnccl::sim
