// The sends and receives of a group, as one schedule that cannot deadlock whatever their order.
//
// Messages between two ranks match in call order, one at a time per direction (that is all a
// connection carries). So the i-th send to each peer and the i-th receive from each peer form
// round i; the operations of a round progress concurrently and rounds run in order. A rank in
// round i only waits for peers' round-i messages, and every message of round i-1 was handed to
// the transport before the sender left that round, so no rank waits on one that waits on it.
// A send to oneself is matched with a receive from oneself, in order, and becomes a copy.
#include "algorithms/p2p/batch.h"

#include <map>

namespace trnccl::algorithms::p2p {

using schedule::Primitive;
using schedule::Step;

schedule::Schedule batch(const std::vector<Op>& ops, int rank, int nranks) {
  schedule::Schedule s;
  s.algorithm = "p2p";
  s.p2p = true;
  s.nranks = nranks;
  std::vector<std::vector<Step>> rounds;
  std::map<int, size_t> sendsTo, recvsFrom;
  std::vector<const Op*> selfSends, selfRecvs;
  for (const Op& op : ops) {
    if (op.peer == rank) {
      (op.send ? selfSends : selfRecvs).push_back(&op);
      continue;
    }
    size_t round = op.send ? sendsTo[op.peer]++ : recvsFrom[op.peer]++;
    if (rounds.size() <= round) rounds.resize(round + 1);
    size_t bytes = device::dataTypeSize(op.type);
    Step step{.prim = op.send ? Primitive::kSend : Primitive::kRecv,
              .recvPeer = op.send ? -1 : op.peer,
              .sendPeer = op.send ? op.peer : -1,
              .src = op.buf,
              .dst = op.buf,
              .count = op.count * bytes};
    rounds[round].push_back(step);
  }
  for (size_t i = 0; i < selfSends.size() && i < selfRecvs.size(); ++i) {
    s.add(Step{.prim = Primitive::kCopy,
               .src = selfSends[i]->buf,
               .dst = selfRecvs[i]->buf,
               .count = selfSends[i]->count * device::dataTypeSize(selfSends[i]->type)});
  }
  // Counts are in bytes (type kInt8) so one schedule can carry operations of several types.
  s.type = device::DataType::kInt8;
  for (auto& round : rounds) s.addGroup(std::move(round));
  return s;
}

}  // namespace trnccl::algorithms::p2p
