#include "plan/cost_model.h"

#include <algorithm>
#include <cmath>

namespace trnccl::plan {
namespace {

using algorithms::Collective;

// Bytes of the whole buffer S, as nccl-tests counts it.
double totalBytes(const algorithms::CollArgs& a) {
  double elem = static_cast<double>(device::dataTypeSize(a.type));
  bool perRank = a.coll == Collective::kAllGather || a.coll == Collective::kReduceScatter ||
                 a.coll == Collective::kAlltoAll;
  return static_cast<double>(a.count) * elem * (perRank ? a.nranks : 1);
}

// Ring phases (reduce-scatter or all-gather) over k members: (k-1) steps of S/k.
double ringPhase(int k, double bytes, double lat, double bw) {
  if (k <= 1) return 0;
  return (k - 1) * (lat + bytes / k / (bw * 1e3));  // GB/s = 1e3 bytes/us
}

// What one more concurrent message per step costs (a descriptor and a semaphore of the DMA
// engine): it is what makes one channel the choice for small messages.
constexpr double kChannelStepUs = 0.2;

// The flat ring over `channels` rings at once, each on its own part (S / channels) and on its own
// directed links (channelRings guarantees no two share one; links are full duplex and the
// description's bandwidth is per direction). Across instances the EFA share per rank is the
// bottleneck, which more rings don't widen.
double channelRingPhase(int k, int channels, double bytes, double lat, double bw,
                        bool sharedBottleneck) {
  if (k <= 1) return 0;
  const double lanes = sharedBottleneck ? 1 : channels;
  return (k - 1) * (lat + (channels - 1) * kChannelStepUs + bytes / k / (lanes * bw * 1e3));
}

}  // namespace

std::optional<double> estimateUs(const std::string& algo, const algorithms::CollArgs& a,
                                 const LinkModel& m) {
  const double S = totalBytes(a);
  const int n = a.nranks;
  const bool ar = a.coll == Collective::kAllReduce;
  const double phases = ar ? 2 : 1;
  // The slowest link a flat algorithm crosses.
  const double flatLat = m.multiInstance ? m.interLatencyUs : m.intraLatencyUs;
  const double flatBw = m.multiInstance ? m.interBandwidth : m.intraBandwidth;
  if (algo == "ring") {
    return phases *
           channelRingPhase(n, std::max(1, a.channels), S, flatLat, flatBw, m.multiInstance);
  }
  if (algo == "chain" || algo == "pairwise") {
    return phases * ringPhase(n, S, flatLat, flatBw);
  }
  if (algo == "mesh") {
    double bw = flatBw / std::max(1.0, m.meshHops);
    double lat = flatLat * std::max(1.0, m.meshHops);
    return phases * (lat + (n - 1) * (S / n) / (bw * 1e3));
  }
  if (algo == "rdh") {
    int levels = 0;
    while ((1 << (levels + 1)) <= n) ++levels;
    double p = std::pow(2.0, levels);
    double hops = std::max(1.0, m.meshHops / 2);  // partners at growing distances
    double t = 2 * levels * flatLat * hops + 2 * (p - 1) / p * S / (flatBw / hops * 1e3);
    if (p < n) t += 2 * (flatLat + S / (flatBw * 1e3));  // fold and unfold
    return t;
  }
  const algorithms::Grid* g = nullptr;
  if (a.shape && algo == "torus2d") g = &a.shape->torus;
  if (a.shape && algo == "hierarchical") g = &a.shape->instances;
  if (g == nullptr || !g->usable(n)) return std::nullopt;
  const int R = g->numRows(), C = g->numCols();
  // Rows are intra-instance links; columns are inter-instance for the hierarchy.
  const double colLat = algo == "hierarchical" ? m.interLatencyUs : m.intraLatencyUs;
  const double colBw = algo == "hierarchical" ? m.interBandwidth : m.intraBandwidth;
  if (ar) {
    return 2 * ringPhase(C, S, m.intraLatencyUs, m.intraBandwidth) +
           2 * ringPhase(R, S / C, colLat, colBw);
  }
  // All-gather: columns carry one block per rank, rows R blocks; reduce-scatter mirrors it.
  return ringPhase(R, S / C, colLat, colBw) + ringPhase(C, S, m.intraLatencyUs, m.intraBandwidth);
}

}  // namespace trnccl::plan
