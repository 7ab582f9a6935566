// --algorithms: the registry as the tuner sees it, one line per (collective, algorithm) in the
// tuner's preference order, read from the descriptors (docs/ALGORITHMS.md's table must agree;
// CTest tools.trnccl_topo.algorithms_documented checks it).
#include <fmt/format.h>

#include "algorithms/registry.h"
#include "sections.h"

namespace trnccl::tools {

// The `ordered` column: whether the algorithm may run the collective in deterministic mode
// (Algorithm::foldsInRankOrder; "-" for collectives that do not reduce).
void printAlgorithms() {
  fmt::print("# {:<13}  {:<12}  {:<8}  {:<7}  {}\n", "collective", "algorithm", "channels",
             "ordered", "description");
  for (algorithms::Collective coll : algorithms::kCollectives) {
    for (const algorithms::Algorithm* algo : algorithms::algorithmsFor(coll)) {
      const char* ordered = !algorithms::reduces(coll) ? "-"
                            : algo->foldsInRankOrder   ? "yes"
                                                       : "no";
      fmt::print("  {:<13}  {:<12}  {:<8}  {:<7}  {}\n", algorithms::collectiveName(coll),
                 algo->name, algo->usesChannels ? "yes" : "no", ordered, algo->description);
    }
  }
}

}  // namespace trnccl::tools
