// What an algorithm sees of one collective call, and the descriptor that holds everything about
// an algorithm.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device/reduce.h"
#include "schedule/schedule.h"

namespace trnccl::algorithms {

enum class Collective {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAlltoAll,
  kGather,
  kScatter,
};
inline constexpr Collective kCollectives[] = {Collective::kAllReduce,     Collective::kAllGather,
                                              Collective::kReduceScatter, Collective::kBroadcast,
                                              Collective::kReduce,        Collective::kAlltoAll,
                                              Collective::kGather,        Collective::kScatter};
// Whether the collective has a root (CollArgs::root).
constexpr bool rooted(Collective c) {
  return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kGather ||
         c == Collective::kScatter;
}
// As TRNCCL_ALGO names it: "allreduce", "allgather", ...
const char* collectiveName(Collective c);
// Whether the collective combines values with a reduction op (all-reduce, reduce-scatter,
// reduce): the ones deterministic mode constrains.
constexpr bool reduces(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

// A grid of ranks from the topology: rows[i][j]. Row i's members form a ring; the j-th members
// of all rows form column j. 2D torus: the torus rows of chips; hierarchical: the instances
// (rows) by local rank (columns), so a column is a rail across instances.
struct Grid {
  std::vector<std::vector<int>> rows;
  int numRows() const { return static_cast<int>(rows.size()); }
  int numCols() const { return rows.empty() ? 0 : static_cast<int>(rows[0].size()); }
  // Whether it covers nranks ranks in a proper R x C grid with R, C > 1.
  bool usable(int nranks) const;
  // (row, column) of a rank; {-1, -1} if absent.
  std::pair<int, int> find(int rank) const;
  std::vector<int> column(int j) const;
};

// A box of ranks in N dimensions (dims_compose.h): every rank at one coordinate; the ranks that
// differ only in dimension d form a line, along d's links in coordinate order. A 3D torus gives
// a chip's cores, X, Y and Z across instances; a switch a chip's cores, the chips of a server
// and the servers.
struct RankDims {
  struct Dim {
    int size = 1;
    double latencyUs = 0;  // one transfer along the dimension
    // GB/s one rank gets along it when every line of the dimension moves data at once (a link
    // shared by the lines of a chip's cores counts once per line).
    double bandwidth = 0;
  };
  std::vector<Dim> dims;   // dims[0] varies fastest in `ranks`
  std::vector<int> ranks;  // the rank at coordinate (c0, c1, ...): ranks[c0 + size0 * (c1 + ...)]
  // Whether it places each of nranks ranks exactly once.
  bool covers(int nranks) const;
  int activeDims() const;                   // dimensions of size > 1
  std::vector<int> coords(int rank) const;  // empty when absent
  // The ranks on `rank`'s line along dimension d, by coordinate.
  std::vector<int> line(int rank, int d) const;
  // Dimensions d and d+1 as one (d's coordinate varying fastest), its links the slower.
  RankDims merged(int d) const;
};

// What the topology tells the algorithms about this communicator.
struct Shape {
  Grid torus;      // empty when the ranks don't form a torus grid
  Grid instances;  // empty when all ranks are on one instance
  // The EFA NIC (rail) each rank's chip uses across instances, by rank; empty without a
  // network. A grid column (one local rank in every instance) stays on one rail.
  std::vector<int> rails;
  // Rank rings that step along physical links, one per possible channel; each a permutation
  // of 0..nranks-1. Empty: the ring algorithms walk ranks in natural order.
  std::vector<std::vector<int>> rings;
  // The ranks of each chip, chip by chip (a chip's ranks are consecutive), and how many ranks a
  // whole chip holds; empty without a description.
  std::vector<std::vector<int>> chips;
  int ranksPerChip = 1;
  // Rings of chips (indices into `chips`) stepping only along chip-to-chip links of a torus,
  // edge-disjoint (two on a whole 4 x 4 torus): KangaRing's channels. Empty otherwise.
  std::vector<std::vector<int>> chipRings;
  RankDims torus3d;  // a 3D-torus description's (core, X, Y, Z); empty otherwise
  // NeuronSwitch: every chip of the communicator reaches every other through the switch, whose
  // lower tier is a server (an instance of the description): (core, chip, server).
  bool switched = false;
  RankDims switchDims;
};

struct LinkModel;  // algorithms/cost.h

// One call, type-erased (STYLE.md rule 2). Counts are in elements, as the API's.
struct CollArgs {
  Collective coll = Collective::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  device::DataType type = device::DataType::kFloat32;
  device::RedOp op = device::RedOp::kSum;
  int root = 0;
  int rank = 0;
  int nranks = 1;
  // Pipeline slice: the most bytes one rank sends per step before its peer must receive.
  size_t sliceBytes = 256 * 1024;
  // Rings the ring algorithms run on concurrently, each over its own part of the buffer (set by
  // the planner; more than the usable rings of the shape falls back to fewer).
  int channels = 1;
  std::shared_ptr<const Shape> shape = nullptr;  // set by the communicator when planning
  // Deterministic mode (TRNCCL_DETERMINISTIC, trncclConfig_t::deterministic): only algorithms
  // whose descriptor claims foldsInRankOrder may run a reducing collective.
  bool deterministic = false;
  // The cost model's links (set by plan::plan before building): a builder that picks a variant
  // by the model — the hierarchy's inter-instance step — reads it, as its estimate does. Null:
  // the default LinkModel.
  const LinkModel* links = nullptr;
};

// An empty schedule for one call: the algorithm's name, the call's type, op and rank count.
inline schedule::Schedule startSchedule(const CollArgs& a, const char* algorithm) {
  schedule::Schedule s;
  s.algorithm = algorithm;
  s.type = a.type;
  s.op = a.op;
  s.nranks = a.nranks;
  return s;
}

// One algorithm of one collective, described in one place: the file that builds it defines its
// descriptor, registry.cc lists it, and everything else reads it — the tuner (supports,
// estimate, usesChannels, build), TRNCCL_ALGO (name), trnccl-topo --algorithms and the table
// of docs/ALGORITHMS.md (name, usesChannels, description). Nothing compares algorithm names.
// Plain function pointers, so descriptors are constants (no initialization order to mind).
struct Algorithm {
  const char* name;         // as TRNCCL_ALGO and the logs call it
  const char* description;  // one line
  // Whether it runs this call; declining is a normal answer (the tuner skips it).
  bool (*supports)(const CollArgs& args);
  // Microseconds on the modelled links (cost.h) for a call it supports; with usesChannels, on
  // args.channels channels.
  double (*estimate)(const CollArgs& args, const LinkModel& links);
  // Runs on args.channels rings at once (the tuner chooses the count, plan::chooseChannels).
  bool usesChannels;
  // This rank's schedule for a call it supports.
  schedule::Schedule (*build)(const CollArgs& args);
  // Every element of a reduction is computed once, by its block's owner, as the left fold
  // op(...op(op(x0, x1), x2)..., x[n-1]) over the ranks in rank order (the running value the
  // first operand), then copied: the result's bits depend only on the inputs, never on the
  // channels, slices, transport or topology. Deterministic mode runs reducing collectives only
  // on algorithms that claim this; false (the default when a descriptor leaves it out) declines.
  bool foldsInRankOrder = false;
  // Optional: the variant build() runs for this call on these links, for the TUNE log (the
  // hierarchy's inter-instance step: "ring" or "tree"); null for an algorithm with one form.
  const char* (*variant)(const CollArgs& args, const LinkModel& links) = nullptr;
};

// `supports` of an algorithm that runs every call.
inline bool anyCall(const CollArgs&) { return true; }

}  // namespace trnccl::algorithms
