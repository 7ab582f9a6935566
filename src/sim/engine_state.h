// The discrete-event engine's state (engine.cc): per message, per connection, per fabric
// resource and per rank, and the tables each thread keeps for its next run. Only engine.cc
// includes it.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/program.h"

namespace trnccl::sim::engine_state {

constexpr double kUnknown = -1;  // a time not known yet (times are >= 0)
constexpr uint32_t kNone = UINT32_MAX;

// Steps that run on the rank alone, when their group begins.
inline bool local(schedule::Primitive p) {
  return p == schedule::Primitive::kCopy || p == schedule::Primitive::kReduce;
}

// One message on a directed connection, from the first side that begins it until both are done
// with it. One cache line: a large mesh round has millions in flight, touched at random moments.
struct alignas(64) Msg {
  double sendReady = kUnknown;   // its data is at the sender (a forward: the first piece is)
  double recvPosted = kUnknown;  // the receiver began the step that receives it
  double start = kUnknown;       // the last hop carries it from start (known once reserved) ...
  double bound = 0;    // ... to bound; before that, the next hop ends no earlier than bound
  uint64_t bytes = 0;  // as the side that began it first says; the other must agree
  int32_t conn = -1;
  uint32_t sendStep = kNone, recvStep = kNone;  // Program::steps() indices
  int32_t forward = -1;                         // the message its receiving step forwards into
  int32_t next = -1;                            // the connection's queue, or the free list
  uint8_t hop = 0;                              // the next hop of its route to reserve
  bool started = false;                         // its first hop is reserved
  bool syncSend = false;  // the send's and the receive's step flags, copied here so that the
  bool reduces = false;   // other side needn't read them
};
static_assert(sizeof(Msg) == 64);

// A connection's messages that one side began and the other has not (all by the same side).
struct Queue {
  int32_t head = -1, tail = -1;
};

// A fabric resource as the engine runs it.
struct Lane {
  double freeAt = 0, bytesPerUs = 1, busyUs = 0;
  double messageUs = 0;       // per message it issues (first hop of a route)
  uint64_t inPlaceBytes = 0;  // messages this large cost half their bytes (LinkSpec)
};

struct RankState {
  uint32_t next = 0, end = 0;  // steps not begun yet: [next, end)
  uint32_t groupFirst = 0;
  int32_t pending = 0;  // parts of the current group not done
  double groupBegin = 0, groupDone = 0;
  double issueFreeAt = 0;  // its DMA queue issues the next message from then on
  bool finished = false;
};

// The engine's largest tables, kept by each thread for its next run: a large call's millions of
// messages and connections then land on memory already mapped, not on pages the kernel must
// clear first (7-12 % of a 2,048-rank mesh call). Every queue is empty between runs.
struct Tables {
  std::vector<Msg> msgs;
  std::vector<int32_t> second;
  std::vector<Queue> queues;
};
inline Tables& threadTables() {
  static thread_local Tables tables;
  return tables;
}

}  // namespace trnccl::sim::engine_state
