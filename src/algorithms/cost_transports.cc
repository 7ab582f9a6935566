// The transports' terms of the cost model (cost.h TransportCost): the table, and what a
// call's messages and reductions cost the emulation's host.
#include <algorithm>
#include <vector>

#include "algorithms/cost.h"

namespace trnccl::algorithms {
namespace {

// The table, measured on the 2-core test machine (docs/ALGORITHMS.md, "The transport under the
// links"; sixteenth session: quiet sweeps of every all-reduce algorithm over tcp at 2, 4 and 8
// ranks, each algorithm's hops in a row and messages counted from its schedules).
// tcp, fitted to the small all-reduces (64 B-4 KiB):
//  - latencyUs 7: a hop between 2 ranks, each on a core of its own (oneshot's one message
//    8-9 us, the ring's and rdh's two in a row 13-15 us).
//  - hostMessageUs 4.5: past 2 ranks the 2 cores serve every rank's messages. At 4 ranks rdh
//    and kangaring run as many hops, with 16 and 12 messages: 64 and 48 us; at 8 ranks rdh,
//    tree, kangaring and the ring (48, 28, 56 and 112 messages) fit 4.6-5.3 us a message on
//    top of their hops. Charged for the share of a host's ranks beyond its cores
//    (kTableHostCores): none at 2 ranks, half at 4, three quarters at 8.
//  - perMessageUs 4.5: the further messages a rank issues at once (a direct round) go through
//    its one thread, each costing what it costs the host.
//  - bandwidthGBs 1.5: a rank's at 4 ranks (the ring's busbw at 2 and 16 MiB: 1.5 and 1.3
//    GB/s; 3.4 between 2 ranks and 0.6 at 8, the cores being the limit).
//  - reduceGBs 3, cacheBytes 32 MiB: rdh's halves arrive whole and are reduced after
//    (hostReduceUs). At 16 MiB rdh took 2.7, 4.7 and 5.3 ms longer than the ring at 2, 4 and 8
//    ranks (2.6-3.1 GB/s of its halves), while at 256 KiB it ran 1.7x faster than the ring (4
//    ranks) and at 2 MiB level with it: the ranks' buffers fit the host's L3 (32 MiB) there.
// shm keeps the hardware's bandwidth and adds no per-message cost of its own (the hardware's
// LinkModel::messageUs already charges each message's DMA descriptor): 4-rank shm runs were too
// noisy here to rank the algorithms, so its terms leave the choices as they were.
// ofi (libfabric's tcp provider here) is taken as tcp: its small messages cost what tcp's do,
// its large ones about twice (being worked on), which moves no pick measured here.
// copyGBs: a rank's local copy on this host while every rank copies (trnccl-sim-calibrate's
// copy rate: 7.9 GB/s per rank at 2 ranks, 5.05 at 4, quiet machine, docs/SIMULATOR.md "This
// machine"). It prices Bruck's reduce-scatter's copy of the whole buffer to scratch, which the
// HBM's 205 GB/s made look free: Bruck was picked for large reduce-scatters over shm and ran
// 2x the ring's time (4-5x while the scratch was faulted in on every call).
constexpr TransportCost kShm{.latencyUs = 5, .bandwidthGBs = 0, .perMessageUs = 0, .copyGBs = 5};
constexpr TransportCost kTcp{.latencyUs = 7,
                             .bandwidthGBs = 1.5,
                             .perMessageUs = 4.5,
                             .copyGBs = 5,
                             .hostMessageUs = 4.5,
                             .reduceGBs = 3,
                             .cacheBytes = 32 << 20};
constexpr TransportCost kOfi = kTcp;
// The cores of the machine the table was measured on: a host's ranks beyond them wait for one
// (hostMessagesUs). A constant, not the host's count: every rank must pick alike.
constexpr double kTableHostCores = 2;

// The busiest host's share of the ranks (a.shape's instances are the hosts; none: one host).
double hostShare(const CollArgs& a) {
  if (a.shape == nullptr || a.shape->instances.numRows() <= 1) return 1;
  size_t most = 0, all = 0;
  for (const std::vector<int>& host : a.shape->instances.rows) {
    most = std::max(most, host.size());
    all += host.size();
  }
  return static_cast<double>(most) / static_cast<double>(std::max<size_t>(1, all));
}

}  // namespace

const TransportCost* transportCost(std::string_view transportName) {
  if (transportName == "shm") return &kShm;
  if (transportName == "tcp") return &kTcp;
  if (transportName == "ofi") return &kOfi;
  return nullptr;
}

double transportMessagesUs(const LinkModel& m, int messages) {
  const TransportCost* t = m.multiInstance ? m.transports.inter : m.transports.intra;
  return t == nullptr ? 0 : std::max(0, messages - 1) * t->perMessageUs;
}

double hostMessagesUs(const CollArgs& a, const LinkModel& m, double messages) {
  double us = 0;
  for (const TransportCost* t : {m.transports.intra, m.transports.inter}) {
    if (t != nullptr) us = std::max(us, t->hostMessageUs);
  }
  if (us <= 0) return 0;
  // Every rank sends alike: the busiest host serves its ranks' share of the messages, and
  // only what its cores cannot run side by side waits.
  const double share = hostShare(a);
  const double ranks = a.nranks * share;
  return messages * share * us * std::max(0.0, 1 - kTableHostCores / std::max(1.0, ranks));
}

double hostReduceUs(const CollArgs& a, const LinkModel& m, double bytes) {
  double us = reduceUs(m, bytes);
  const double buffers = 2 * totalBytes(a) * a.nranks * hostShare(a);
  for (const TransportCost* t : {m.transports.intra, m.transports.inter}) {
    if (t != nullptr && t->reduceGBs > 0 && buffers > t->cacheBytes) {
      us = std::max(us, bytes / (t->reduceGBs * 1e3));
    }
  }
  return us;
}

}  // namespace trnccl::algorithms
