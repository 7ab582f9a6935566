// The discrete-event engine: runs every rank's compiled schedule (program.h) on the fabric
// (topology/fabric_model.h) with the executor's dependency rules (src/schedule/executor.cc):
//   - a rank runs its groups in order; the steps of a group begin together, and the group is
//     over when each of its steps received everything and handed everything to the transport;
//   - messages on a directed connection match in the order each side begins them;
//   - a send is handed to the transport as soon as its data is there and either the receiver has
//     begun its receive or the message fits the connection's buffer (eagerBytes); it is over
//     once its last byte left (syncSend: once the receiver has it all);
//   - a forwarding primitive streams: its send may start once the first piece (pieceBytes) was
//     received (and reduced), and ends no earlier than a piece after its receive is done;
//   - a message is issued by its sender's DMA queue (the fabric's messageUs each, one after
//     another; across instances its EFA NIC's send queue charges it instead), and asks for its
//     first hop once issued;
//   - each resource of a transfer's route carries it in turn, first come first served, for
//     bytes / its bandwidth: a hop is asked for once the data reaches it (the previous hop
//     started), and cannot finish before the previous hop; the data reaches the receiver the
//     summed latency after the last hop. A reduction runs at the rank's share of HBM
//     bandwidth, streaming with its input;
//   - a message read in place (a link's in_place_bytes: the shm transport's descriptors) is
//     over for its sender once issued; its transfer starts once its receive has begun (the
//     receiver reads it), a reduction of it is the transfer's one pass (the slower of the two),
//     and what its step forwards is there once it is all read; if its sender wrote its bytes
//     during the call (SimStep::kFreshSend), it takes at least the fabric's inPlaceFreshUs;
//     on such a link a smaller message goes through the FIFO, and a reduction of it reads the
//     FIFO where its sender copied it: there after the sender's copy, half the link's time;
//   - a duplicated write (Step::sendPeer2) sends the same pieces to both peers, one transfer
//     each; a group's local copies and reductions (kCopy, kReduce) run at HBM bandwidth one
//     after another, in step order, from when their group begins (the executor's order);
//   - when the description has working-set bands, every bandwidth above (each resource's, HBM)
//     is its band for the call's working set (Program::workingSet), for the whole call.
// Times are microseconds from the call's start; every rank begins its first group at the
// fabric's callUs (the host runtime's cost of a call, once; 0 but for a measured machine).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "sim/program.h"

namespace trnccl::sim {

struct EngineOptions {
  size_t pieceBytes = 64 * 1024;  // what a forwarding primitive streams at a time
  size_t eagerBytes = 1 << 20;    // a send this small leaves before its receive is posted
};

// What a trace shows (optional): one record per step and per transfer on each resource.
struct Recorder {
  struct StepSpan {
    int32_t rank;
    uint32_t step;  // index in the rank's schedule
    schedule::Primitive prim;
    int32_t recvPeer, sendPeer;  // -1: none
    uint64_t bytes;
    double beginUs, endUs;
  };
  struct Transfer {
    int32_t resource;  // Fabric::resources() index
    int32_t from, to;  // ranks
    uint64_t bytes;
    double startUs, endUs;
  };
  size_t limit = 1'000'000;  // records kept of each kind; later ones are only counted
  std::vector<StepSpan> steps;
  std::vector<Transfer> transfers;
  uint64_t dropped = 0;
};

struct Outcome {
  double timeUs = 0;              // when the last rank finished
  std::vector<double> rankEndUs;  // per rank
  std::vector<double> busyUs;     // per fabric resource: time it carried data
  uint64_t steps = 0, messages = 0, events = 0;
};

// Runs `program` to the end. Errors: a send and its receive of different sizes, or ranks that
// wait on each other forever (a deadlock: the first stuck rank and step are named).
Result<Outcome> run(const Program& program, const EngineOptions& options,
                    Recorder* recorder = nullptr);

}  // namespace trnccl::sim
