// N-dimensional torus: the 2D grid composition generalised to every dimension of the torus of
// ranks (Shape::torus3d: a chip's cores, X, Y, Z), each dimension a ring along its own links;
// dims_compose.cc has the composition.
//
// Composition, with the dimensions d1..dk in the order the cost model finds cheapest (widest
// per-rank bandwidth first: a chip's cores, then X and Y, then Z; k = dimensions of size > 1):
//   all-reduce:     ring RS along d1 -> ... -> ring AR along dk -> ring AG along d(k-1) ... d1;
//   all-gather:     ring AGs along dk ... d1 in the order-major layout, then into rank order;
//   reduce-scatter: into the order-major layout, then ring RSs along d1 ... dk.
// Steps: 2 sum(n_i - 1) ring transfers per slice (all-reduce), sum(n_i - 1) (the others).
// Bytes on the wire per rank: phase i moves (n_i - 1)/n_i * S / (n1 ... n(i-1)) along d_i (twice
// for all-reduce), so the widest links carry the most and Z the least. Every element's final
// value is computed once and copied: bitwise identical on all ranks. In place: see
// dims_compose.cc (every block is read before its rank's final write).
#include "algorithms/torus3d.h"

#include "algorithms/dims_compose.h"

namespace trnccl::algorithms {
namespace {

constexpr char kName[] = "torus3d";

const RankDims& dims(const CollArgs& a) { return a.shape->torus3d; }

bool supports(const CollArgs& a) {
  return a.shape && dims(a).covers(a.nranks) && dims(a).activeDims() >= 2;
}

double estimate(const CollArgs& a, const LinkModel& m) {
  return dimsEstimate(a, dims(a), Phase::kRing, m);
}

constexpr Algorithm describe(const char* description,
                             schedule::Schedule (*build)(const CollArgs&)) {
  return Algorithm{.name = kName,
                   .description = description,
                   .supports = supports,
                   .estimate = estimate,
                   .usesChannels = false,
                   .build = build};
}

}  // namespace

const Algorithm kTorus3dAllReduce = describe(
    "reduce-scatter along each torus dimension, all-reduce along the last, all-gather back",
    [](const CollArgs& a) { return dimsAllReduce(a, dims(a), Phase::kRing, kName); });
const Algorithm kTorus3dAllGather =
    describe("all-gather along each torus dimension, narrowest links first",
             [](const CollArgs& a) { return dimsAllGather(a, dims(a), Phase::kRing, kName); });
const Algorithm kTorus3dReduceScatter =
    describe("reduce-scatter along each torus dimension, widest links first",
             [](const CollArgs& a) { return dimsReduceScatter(a, dims(a), Phase::kRing, kName); });

}  // namespace trnccl::algorithms
