#include "algorithms/torus2d.h"

#include "algorithms/grid_compose.h"

namespace trnccl::algorithms {

bool torus2dSupports(const CollArgs& a) { return a.shape && a.shape->torus.usable(a.nranks); }
schedule::Schedule torus2dAllReduce(const CollArgs& a) {
  return gridAllReduce(a, a.shape->torus, "torus2d");
}
schedule::Schedule torus2dAllGather(const CollArgs& a) {
  return gridAllGather(a, a.shape->torus, "torus2d");
}
schedule::Schedule torus2dReduceScatter(const CollArgs& a) {
  return gridReduceScatter(a, a.shape->torus, "torus2d");
}

}  // namespace trnccl::algorithms
