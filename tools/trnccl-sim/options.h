// trnccl-sim's command line (CLI11): the topology, the ranks, the collective, the sweep of sizes
// in nccl-tests' flags, which algorithms, and the outputs.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "trnccl/trnccl.h"

namespace trnccl::simtool {

struct Options {
  std::string topology;                 // built-in name or YAML path
  int instances = 0;                    // --instances: 0 = the description's
  int ranks = 0;                        // --ranks: 0 = every rank of the instances
  std::string coll;                     // --coll
  size_t minBytes = 32u << 20;          // -b
  size_t maxBytes = 32u << 20;          // -e
  size_t stepFactor = 2;                // -f (> 1 multiplies)
  size_t stepBytes = 0;                 // -i (with -f 1: adds)
  trncclDataType_t type = trncclFloat;  // -d
  trncclRedOp_t op = trncclSum;         // -o
  int root = 0;                         // -r
  std::string algo;                     // --algo: "" = the tuner's, "all", or a name
  int channels = 0;                     // --channels: 0 = the tuner's
  size_t sliceBytes = 256 * 1024;       // --slice: the pipeline slice (a quarter of a connection)
  size_t pieceBytes = 64 * 1024;        // --piece
  std::optional<size_t> eagerBytes;     // --eager: default 4 slices (the connection's buffer)
  std::string json;                     // -J
  std::string plot;                     // --plot FILE.png
  std::string trace;                    // --trace FILE.json
  double maxExcess = -1;  // --max-excess: with --algo all, fail when the tuner's pick is slower
  int jobs = 1;           // -j: calls simulated at once (default: one per core)
};

// Parses argv; on --help or an error prints and returns the exit code instead.
struct Parsed {
  Options options;
  std::optional<int> exitCode;
};
Parsed parse(int argc, char** argv);

}  // namespace trnccl::simtool
