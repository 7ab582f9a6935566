// The discrete-event engine's state (engine.cc): per message and connection (the message table
// below), per fabric resource and per rank, and the tables each thread keeps for its next run.
// Only engine.cc (and its tests) include it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/event_queue.h"
#include "sim/huge_pages.h"
#include "sim/program.h"

namespace trnccl::sim::engine_state {

constexpr double kUnknown = -1;  // a time not known yet (times are >= 0)
constexpr uint32_t kNone = UINT32_MAX;

// Steps that run on the rank alone, when their group begins.
inline bool local(schedule::Primitive p) {
  return p == schedule::Primitive::kCopy || p == schedule::Primitive::kReduce;
}

// One message on a directed connection, from the first side that begins it until both are done
// with it, and the connection it travels on. One cache line: a large mesh round has millions in
// flight, touched at random moments, so each touch should cost one miss (Messages, below).
struct alignas(64) Msg {
  enum Flags : uint8_t {
    kStarted = 1,    // its first hop is reserved (or asked for)
    kSyncSend = 2,   // the send's and the receive's step flags, copied here so that the
    kReduces = 4,    // other side needn't read them
    kSendReady = 8,  // its data is at the sender (a forward: the first piece is)
    kCarrying = 16,  // a connection's slot: its own message is in use
    kSecond = 32,    // a duplicated write's first message: Messages::second() is the other
    kLastHop = 64,   // its last hop is reserved (before its receive began: `when` is its start)
    kInPlace = 128,  // issued, and read in place by its receiver: no hop until the receive began
  };  // (all 8 bits of `flags` are taken: a further flag needs a wider field, or a bit of `hop`)
  // Once its receive began (recvStep is set), then; before, once its last hop is reserved
  // (kLastHop), when that hop starts carrying it. The engine needs the one only while the
  // other is still unknown, so they share the field.
  double when = kUnknown;
  double bound = 0;         // its last hop ends no earlier than bound (so far: the hops reserved)
  uint64_t bytes : 48 = 0;  // as the side that began it first says; the other must agree
  uint64_t hop : 8 = 0;     // the next hop of its route to reserve
  uint64_t flags : 8 = 0;
  uint32_t sendStep = kNone, recvStep = kNone;  // Program::steps() indices
  int32_t forward = -1;                         // the message its receiving step forwards into
  int32_t next = -1;                            // the connection's queue, or the free list
  // The connection's ends and route (Connection): a slot's own, a pooled message's copy.
  int32_t from = 0, to = 0;
  uint32_t route = 0;
  // A slot's: the first and last message of the connection's queue (-1: empty), linked by next.
  int32_t head = -1, tail = -1;

  bool has(uint8_t f) const { return (flags & f) != 0; }
  void set(uint8_t f, bool on = true) { flags = on ? (flags | f) : (flags & ~uint64_t{f}); }
};
static_assert(sizeof(Msg) == 64);
static_assert(kMaxStepBytes < (uint64_t{1} << 48), "Msg::bytes holds every step's size");

using MsgTable = std::vector<Msg, HugePageAllocator<Msg>>;

// Every message of a run. Message c < connections is connection c's slot: the connection's
// queue of messages one side began and the other has not (all by the same side), its ends and
// route, and room for one message of its own, the one a connection nearly always carries. A
// connection with more at once (a pipeline's eager sends) takes the rest from a pool behind the
// slots. So matching a message and every later touch of it read the one line that holds the
// connection too; with queues, messages and connections in three tables a message cost three
// misses at each touch (docs/SIMULATOR.md, "Scale").
class Messages {
 public:
  explicit Messages(MsgTable& table, std::vector<int32_t>& second)
      : msgs_(table), second_(second) {}

  // Every connection's slot empty; room for `sends` messages so that the table never moves.
  void reset(const std::vector<Connection>& conns, uint64_t sends) {
    msgs_.clear();
    // At least twice the last capacity: address space only, and what a later, larger run would
    // otherwise map afresh (and have cleared) once more.
    const size_t need = conns.size() + sends;
    if (need > msgs_.capacity()) msgs_.reserve(std::max(need, 2 * msgs_.capacity()));
    for (const Connection& c : conns) {
      Msg& m = msgs_.emplace_back();
      m.from = c.from;
      m.to = c.to;
      m.route = c.route;
    }
    slots_ = static_cast<int32_t>(conns.size());
    free_ = -1;
    allocated_ = 0;
  }

  Msg& operator[](int32_t id) { return msgs_[static_cast<size_t>(id)]; }
  const Msg& operator[](int32_t id) const { return msgs_[static_cast<size_t>(id)]; }
  uint64_t allocated() const { return allocated_; }  // messages begun since reset()

  // The message this side's step begins on connection c: the oldest one the other side began
  // and this side has not, or a new one queued for the other side (carrying `bytes`; a matched
  // one carries what the other side said: the caller compares).
  int32_t post(int32_t c, bool sender, uint32_t step, uint64_t bytes) {
    if (const int32_t id = (*this)[c].head; id >= 0) {
      Msg& h = (*this)[id];
      if (sender ? h.sendStep == kNone : h.recvStep == kNone) {
        Msg& slot = (*this)[c];
        slot.head = h.next;
        if (slot.head < 0) slot.tail = -1;
        (sender ? h.sendStep : h.recvStep) = step;
        return id;
      }
    }
    const int32_t id = allocate(c);
    Msg& m = (*this)[id];
    m.bytes = bytes;
    (sender ? m.sendStep : m.recvStep) = step;
    Msg& slot = (*this)[c];
    if (slot.tail < 0) {
      slot.head = id;
    } else {
      (*this)[slot.tail].next = id;
    }
    slot.tail = id;
    return id;
  }

  // Both sides are done with message id.
  void release(int32_t id) {
    if (id < slots_) {
      (*this)[id].flags = 0;
    } else {
      (*this)[id].next = free_;
      free_ = id;
    }
  }

  // The oldest message queued on connection c, or -1.
  int32_t head(int32_t c) const { return (*this)[c].head; }

  // A duplicated write's second message: set on the first, read while it forwards.
  void setSecond(int32_t first, int32_t second) {
    if (second_.size() <= static_cast<size_t>(first)) second_.resize(msgs_.capacity(), -1);
    second_[static_cast<size_t>(first)] = second;
    (*this)[first].set(Msg::kSecond);
  }
  int32_t second(int32_t id) const {
    return (*this)[id].has(Msg::kSecond) ? second_[static_cast<size_t>(id)] : -1;
  }

  void prefetch(int32_t id) const { __builtin_prefetch(&msgs_[static_cast<size_t>(id)]); }
  // Connection c's slot is in cache: fetch its queue's first message too, when pooled.
  void prefetchQueue(int32_t c) const {
    if (const int32_t head = (*this)[c].head; head >= 0 && head != c) prefetch(head);
  }

 private:
  // A new message on connection c: the slot's own when free, else one from the pool.
  int32_t allocate(int32_t c) {
    ++allocated_;
    Msg& slot = (*this)[c];
    if (!slot.has(Msg::kCarrying)) {
      clear(slot);
      slot.flags = Msg::kCarrying;
      return c;
    }
    int32_t id;
    if (free_ >= 0) {
      id = free_;
      free_ = (*this)[id].next;
    } else {
      id = static_cast<int32_t>(msgs_.size());
      msgs_.emplace_back();
    }
    Msg& m = (*this)[id];
    const Msg& conn = (*this)[c];
    clear(m);
    m.flags = 0;
    m.from = conn.from;
    m.to = conn.to;
    m.route = conn.route;
    return id;
  }
  // The message's fields, not the connection's.
  static void clear(Msg& m) {
    m.when = kUnknown;
    m.bound = 0;
    m.bytes = 0;
    m.hop = 0;
    m.sendStep = m.recvStep = kNone;
    m.forward = m.next = -1;
  }

  MsgTable& msgs_;
  std::vector<int32_t>& second_;  // per message, valid where Msg::kSecond is set
  int32_t slots_ = 0;
  int32_t free_ = -1;  // pooled messages no longer in use
  uint64_t allocated_ = 0;
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
// messages and events then land on memory already mapped, not on pages the kernel must clear
// first (7-12 % of a 2,048-rank mesh call). Messages::reset() and EventQueue::clear() make them
// new for each run.
struct Tables {
  MsgTable msgs;
  std::vector<int32_t> second;
  EventQueue events;
};
inline Tables& threadTables() {
  static thread_local Tables tables;
  return tables;
}

}  // namespace trnccl::sim::engine_state
