#include "algorithms/cost.h"

#include <algorithm>

namespace trnccl::algorithms {
namespace {

// What one more concurrent message per step costs (a descriptor and a semaphore of the DMA
// engine): it is what makes one channel the choice for small messages.
constexpr double kChannelStepUs = 0.2;

}  // namespace

LinkCost intraLink(const LinkModel& m) { return {m.intraLatencyUs, m.intraBandwidth}; }
LinkCost interLink(const LinkModel& m) { return {m.interLatencyUs, m.interBandwidth}; }
LinkCost flatLink(const LinkModel& m) { return m.multiInstance ? interLink(m) : intraLink(m); }

double totalBytes(const CollArgs& a) {
  double elem = static_cast<double>(device::dataTypeSize(a.type));
  bool perRank = a.coll == Collective::kAllGather || a.coll == Collective::kReduceScatter ||
                 a.coll == Collective::kAlltoAll || a.coll == Collective::kGather ||
                 a.coll == Collective::kScatter;
  return static_cast<double>(a.count) * elem * (perRank ? a.nranks : 1);
}

double ringPhase(int k, double bytes, LinkCost link) {
  if (k <= 1) return 0;
  return (k - 1) * (link.latencyUs + bytes / k / (link.bandwidth * 1e3));
}

double flatPhase(const CollArgs& a, const LinkModel& m) {
  return ringPhase(a.nranks, totalBytes(a), flatLink(m));
}

double directPhase(const CollArgs& a, const LinkModel& m) {
  const LinkCost flat = flatLink(m);
  const double hops = std::max(1.0, m.meshHops);
  const double bw = flat.bandwidth / hops, lat = flat.latencyUs * hops;
  const int n = a.nranks;
  return lat + (n - 1) * (totalBytes(a) / n) / (bw * 1e3);
}

double flatRingPhase(const CollArgs& a, const LinkModel& m) {
  const int k = a.nranks, channels = std::max(1, a.channels);
  if (k <= 1) return 0;
  const LinkCost link = flatLink(m);
  const double lanes = m.multiInstance ? 1 : channels;
  return (k - 1) * (link.latencyUs + (channels - 1) * kChannelStepUs +
                    totalBytes(a) / k / (lanes * link.bandwidth * 1e3));
}

}  // namespace trnccl::algorithms
