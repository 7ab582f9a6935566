#include "algorithms/hierarchical.h"

#include "algorithms/grid_compose.h"

namespace trnccl::algorithms {

bool hierarchicalSupports(const CollArgs& a) {
  return a.shape && a.shape->instances.usable(a.nranks);
}
schedule::Schedule hierarchicalAllReduce(const CollArgs& a) {
  return gridAllReduce(a, a.shape->instances, "hierarchical");
}
schedule::Schedule hierarchicalAllGather(const CollArgs& a) {
  return gridAllGather(a, a.shape->instances, "hierarchical");
}
schedule::Schedule hierarchicalReduceScatter(const CollArgs& a) {
  return gridReduceScatter(a, a.shape->instances, "hierarchical");
}

}  // namespace trnccl::algorithms
