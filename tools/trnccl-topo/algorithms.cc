// --algorithms: the registry as the tuner sees it, one line per (collective, algorithm) in the
// tuner's preference order, read from the descriptors (docs/ALGORITHMS.md's table must agree;
// CTest tools.trnccl_topo.algorithms_documented checks it).
#include <fmt/format.h>

#include "algorithms/registry.h"
#include "sections.h"

namespace trnccl::tools {

void printAlgorithms() {
  fmt::print("# {:<13}  {:<12}  {:<8}  {}\n", "collective", "algorithm", "channels", "description");
  for (algorithms::Collective coll : algorithms::kCollectives) {
    for (const algorithms::Algorithm* algo : algorithms::algorithmsFor(coll)) {
      fmt::print("  {:<13}  {:<12}  {:<8}  {}\n", algorithms::collectiveName(coll), algo->name,
                 algo->usesChannels ? "yes" : "no", algo->description);
    }
  }
}

}  // namespace trnccl::tools
