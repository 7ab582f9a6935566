// Every rank's schedule of one call, compiled for the engine: steps reduced to what timing needs
// (primitive, bytes, the directed connections they receive and send on), and the connections
// with their routes on the fabric. Built rank by rank, so a caller can drop each Schedule once
// added: at 2,048 ranks the schedules themselves would not fit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "schedule/schedule.h"
#include "sim/huge_pages.h"
#include "topology/fabric_model.h"

namespace trnccl::sim {

using Fabric = topology::FabricModel;
using topology::Resource;
using Route = topology::Path;

// The largest step the engine carries (steps and messages keep their size in 48 bits): 256 TiB.
constexpr uint64_t kMaxStepBytes = (uint64_t{1} << 48) - 1;

// 16 bytes: a 2,048-rank call has tens of millions, read as their groups begin.
struct SimStep {
  enum Flags : uint8_t {
    kLastOfGroup = 1,  // the next step starts a new group
    kReduces = 2,      // combines what it receives with a local operand
    kSyncSend = 4,     // over only once the peer received it
    kMovesData = 8,    // a local copy whose source and destination differ, or a local reduction
    kSecondSend = 16,  // a duplicated write: Program::secondConn() is its second destination
    kFreshSend = 32,   // sends bytes written during the call (a forward, or a source an earlier
                       // step wrote); only where the fabric reads in place (in_place_bytes)
  };
  uint64_t bytes : 48 = 0;
  uint64_t primitive : 8 = static_cast<uint8_t>(schedule::Primitive::kCopy);
  uint64_t flags : 8 = 0;
  int32_t recvConn = -1;  // connection it receives on, -1 if none
  int32_t sendConn = -1;  // connection it sends on, -1 if none

  schedule::Primitive prim() const { return static_cast<schedule::Primitive>(primitive); }
  bool has(uint8_t f) const { return (flags & f) != 0; }
};
static_assert(sizeof(SimStep) == 16);

// One direction between two ranks, and the route it crosses (Program::route(): routes are
// shared, as a large mesh has millions of connections and far fewer distinct routes).
struct Connection {
  int32_t from = 0, to = 0;
  uint32_t route = 0;
};

// Where a pair of ranks stands in the tables below: its route once found, and its connection in
// the Program numbered `stamp`.
struct PairEntry {
  uint32_t route = 0;  // route id + 1 (0: not found yet)
  uint32_t stamp = 0;
  int32_t conn = -1;
};

// What one Program leaves to the next of the same fabric (a Simulator keeps a few, one per call
// at once): the memory of the largest tables, already mapped (fresh memory the kernel clears
// page by page first: hundreds of MB of steps at 2,048 ranks), and the fabric's routes between
// the pairs of ranks seen so far, deduplicated, so that each pair's is found once, not per call.
struct ProgramTables {
  using Steps = std::vector<SimStep, HugePageAllocator<SimStep>>;
  Steps steps;
  std::vector<Connection> conns;
  using Routes = std::vector<Route, HugePageAllocator<Route>>;
  Routes routes;
  std::vector<uint32_t> routeSlots;  // open addressing on the hops: route id + 1 (0: empty)
  // (from, to) -> PairEntry: a table of every pair up to kDenseRanks ranks (192 MiB at 4,096),
  // else open addressing on from * nranks + to + 1 (0: empty).
  static constexpr int kDenseRanks = 4096;
  std::vector<PairEntry, HugePageAllocator<PairEntry>> dense;
  std::vector<uint64_t> keys;
  std::vector<PairEntry> values;
  size_t used = 0;
  uint32_t stamp = 0;              // the last Program's
  const Fabric* fabric = nullptr;  // whose routes these are
};

class Program {
 public:
  // tables: those an earlier Program of `fabric` left (null: new ones, dropped at the end).
  explicit Program(const Fabric& fabric, ProgramTables* tables = nullptr);
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // Compiles rank's schedule (ranks in any order, each once).
  Status add(int rank, const schedule::Schedule& s);

  int nranks() const { return static_cast<int>(first_.size()); }
  // Rank r's steps are steps()[first(r), first(r + 1)) (ranks never added have none).
  using Steps = ProgramTables::Steps;
  const Steps& steps() const { return t_.steps; }
  uint32_t first(int rank) const;
  uint32_t end(int rank) const;
  const std::vector<Connection>& connections() const { return t_.conns; }
  const Route& route(int32_t conn) const {
    return t_.routes[t_.conns[static_cast<size_t>(conn)].route];
  }
  // The second destination's connection of step i (SimStep::kSecondSend), else -1.
  int32_t secondConn(uint32_t step) const;
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
  // Every route a connection takes (and perhaps more: those of earlier Programs), by id.
  const ProgramTables::Routes& routes() const { return t_.routes; }

 private:
  Result<int32_t> connection(int from, int to);
  PairEntry& pair(int from, int to);
  static constexpr size_t kAhead = 8;
  void prefetchPairs(int rank, const schedule::Step& st) const;
  PairEntry& hashedPair(uint64_t key);
  uint32_t routeId(const Route& r);

  const Fabric& fabric_;
  std::unique_ptr<ProgramTables> own_;  // without tables given
  ProgramTables& t_;
  std::string algorithm_;
  std::vector<uint32_t> first_, count_;
  std::vector<std::pair<uint32_t, int32_t>> seconds_;  // (step, connection), by step
  bool readsInPlace_ = false;  // some resource of the fabric reads messages in place
  uint64_t sends_ = 0;
  uint64_t workingSet_ = 0;
};

}  // namespace trnccl::sim
