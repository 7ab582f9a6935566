#include "sim/engine.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/event_queue.h"

namespace trnccl::sim {
namespace {

using schedule::Primitive;

constexpr double kUnknown = -1;  // a time not known yet (times are >= 0)
constexpr uint32_t kNone = UINT32_MAX;

// One message on a directed connection, from the first side that begins it until both sides
// are done with it.
struct Msg {
  double sendReady = kUnknown;   // its data is at the sender (a forward: the first piece is)
  double recvPosted = kUnknown;  // the receiver began the step that receives it
  double start = kUnknown;       // the transfer holds its route from start to end
  double end = 0;
  double minEnd = 0;       // a forward ends no earlier than this (its input's end and a piece)
  uint64_t bytes = 0;      // what the sender sends
  uint64_t recvBytes = 0;  // what the receiver expects
  int32_t conn = -1;
  uint32_t sendStep = kNone, recvStep = kNone;  // Program::steps() indices
  bool syncSend = false;                        // the send's step flags, copied here so that
  bool reduces = false;                         // the other side needn't read its steps
  int32_t forward = -1;                         // the message its receiving step forwards into
  int32_t next = -1;                            // the connection's queue, or the free list
};

struct RankState {
  uint32_t next = 0, end = 0;  // steps not begun yet: [next, end)
  uint32_t groupFirst = 0;
  int32_t pending = 0;  // parts of the current group not done
  double groupBegin = 0, groupDone = 0;
  bool finished = false;
};

enum EventKind : uint32_t { kBegin, kForward };

class Engine {
 public:
  Engine(const Program& p, const EngineOptions& o, Recorder* rec)
      : p_(p), steps_(p.steps()), conns_(p.connections()), o_(o), rec_(rec) {
    const int n = p.nranks();
    ranks_.resize(static_cast<size_t>(n));
    heads_.assign(conns_.size(), -1);
    tails_.assign(conns_.size(), -1);
    freeAt_.assign(p.fabric().resources().size(), 0);
    for (const Resource& r : p.fabric().resources()) rate_.push_back(r.bytesPerUs);
    out_.busyUs.assign(freeAt_.size(), 0);
    out_.rankEndUs.assign(static_cast<size_t>(n), 0);
    hbm_ = p.fabric().hbmBytesPerUs();
    if (rec_ != nullptr) stepEnd_.assign(steps_.size(), 0);
    for (int r = 0; r < n; ++r) {
      RankState& rs = ranks_[static_cast<size_t>(r)];
      rs.next = p.first(r);
      rs.end = p.end(r);
      if (rs.next < rs.end) {
        push(0, static_cast<uint32_t>(r), kBegin);
      } else {
        rs.finished = true;
      }
    }
  }

  Result<Outcome> run() {
    while (!queue_.empty() && error_.isOk()) {
      const Event ev = queue_.pop();
      ++out_.events;
      if (ev.kind == kBegin) {
        beginGroup(static_cast<int>(ev.id), ev.time());
      } else {
        Msg& m = msgs_[ev.id];
        m.sendReady = ev.time();
        tryStart(static_cast<int32_t>(ev.id), ev.time());
      }
    }
    if (!error_) return error_;
    TRN_TRY(checkAllFinished());
    for (size_t r = 0; r < ranks_.size(); ++r)
      out_.timeUs = std::max(out_.timeUs, out_.rankEndUs[r]);
    out_.steps = steps_.size();
    return std::move(out_);
  }

 private:
  void push(double t, uint32_t id, uint32_t kind) { queue_.push(t, id, kind); }

  // A large group (a mesh round: thousands of steps) touches a connection per step, each
  // somewhere else in memory: fetch those of a later step while this one is handled.
  static constexpr uint32_t kAhead = 16;
  void prefetchStep(const SimStep& st) const {
    for (int32_t c : {st.sendConn, st.recvConn}) {
      if (c < 0) continue;
      __builtin_prefetch(&heads_[static_cast<size_t>(c)]);
      __builtin_prefetch(&conns_[static_cast<size_t>(c)]);
    }
  }
  // ... and, once a connection's queue head is in cache, the message it points to.
  void prefetchHeads(const SimStep& st) const {
    for (int32_t c : {st.sendConn, st.recvConn}) {
      if (c < 0) continue;
      if (const int32_t h = heads_[static_cast<size_t>(c)]; h >= 0) {
        __builtin_prefetch(&msgs_[static_cast<size_t>(h)]);
      }
    }
  }

  int32_t allocMsg() {
    int32_t id;
    if (free_ >= 0) {
      id = free_;
      free_ = msgs_[static_cast<size_t>(id)].next;
      msgs_[static_cast<size_t>(id)] = Msg{};
    } else {
      id = static_cast<int32_t>(msgs_.size());
      msgs_.emplace_back();
    }
    ++out_.messages;
    return id;
  }
  void freeMsg(int32_t id) {
    msgs_[static_cast<size_t>(id)].next = free_;
    free_ = id;
  }

  // The message this side's begin matches on connection c: the oldest one the other side began
  // and this side has not, or a new one queued for the other side.
  int32_t match(int32_t c, bool sender) {
    int32_t& head = heads_[static_cast<size_t>(c)];
    if (head >= 0) {
      const Msg& h = msgs_[static_cast<size_t>(head)];
      const bool otherSide = sender ? h.sendStep == kNone : h.recvStep == kNone;
      if (otherSide) {
        const int32_t id = head;
        head = h.next;
        if (head < 0) tails_[static_cast<size_t>(c)] = -1;
        return id;
      }
    }
    const int32_t id = allocMsg();
    msgs_[static_cast<size_t>(id)].conn = c;
    int32_t& tail = tails_[static_cast<size_t>(c)];
    if (tail >= 0) {
      msgs_[static_cast<size_t>(tail)].next = id;
    } else {
      head = id;
    }
    tail = id;
    return id;
  }

  void beginGroup(int rank, double now);
  void tryStart(int32_t id, double now);
  void startTransfer(int32_t id, double now);
  void received(int32_t id);
  void partDone(int rank, uint32_t step, double t);
  Status checkAllFinished() const;

  const Program& p_;
  const Program::Steps& steps_;
  const std::vector<Connection>& conns_;
  const EngineOptions o_;
  Recorder* rec_;
  double hbm_ = 1;
  std::vector<RankState> ranks_;
  std::vector<Msg> msgs_;
  int32_t free_ = -1;
  std::vector<int32_t> heads_, tails_;
  std::vector<double> freeAt_, rate_;  // per fabric resource
  std::vector<double> stepEnd_;        // with a recorder only
  EventQueue queue_;
  Outcome out_;
  Status error_;
};

void Engine::beginGroup(int rank, double now) {
  RankState& rs = ranks_[static_cast<size_t>(rank)];
  const uint32_t first = rs.next;
  uint32_t last = first;
  while (!(steps_[last].flags & SimStep::kLastOfGroup) && last + 1 < rs.end) ++last;
  rs.next = last + 1;
  rs.groupFirst = first;
  rs.groupBegin = rs.groupDone = now;
  rs.pending = 1;  // held until every step of the group has begun
  for (uint32_t i = first; i <= last; ++i) {
    const SimStep& st = steps_[i];
    rs.pending += (st.recvConn >= 0) + (st.sendConn >= 0) + (st.prim == Primitive::kCopy);
  }
  for (uint32_t i = first; i <= last && error_.isOk(); ++i) {
    if (i + kAhead <= last) prefetchStep(steps_[i + kAhead]);
    if (i + kAhead / 2 <= last) prefetchHeads(steps_[i + kAhead / 2]);
    const SimStep& st = steps_[i];
    if (st.prim == Primitive::kCopy) {
      const bool moves = st.flags & SimStep::kMovesData;
      partDone(rank, i, now + (moves ? 2.0 * static_cast<double>(st.bytes) / hbm_ : 0));
      continue;
    }
    int32_t out = -1;
    if (st.sendConn >= 0) {
      out = match(st.sendConn, true);
      Msg& m = msgs_[static_cast<size_t>(out)];
      m.sendStep = i;
      m.bytes = st.bytes;
      m.syncSend = st.flags & SimStep::kSyncSend;
    }
    if (st.recvConn >= 0) {
      const int32_t in = match(st.recvConn, false);
      Msg& m = msgs_[static_cast<size_t>(in)];
      m.recvStep = i;
      m.recvBytes = st.bytes;
      m.reduces = st.flags & SimStep::kReduces;
      m.recvPosted = now;
      m.forward = out;
      if (m.start != kUnknown) {
        received(in);
      } else if (m.sendReady != kUnknown) {
        tryStart(in, now);  // a large send waited for this receive
      }
    }
    if (st.prim == Primitive::kSend) {
      msgs_[static_cast<size_t>(out)].sendReady = now;
      tryStart(out, now);
    }
  }
  partDone(rank, kNone, now);
}

void Engine::tryStart(int32_t id, double now) {
  const Msg& m = msgs_[static_cast<size_t>(id)];
  if (m.start != kUnknown || m.sendReady == kUnknown) return;
  if (m.recvStep == kNone && m.bytes > o_.eagerBytes) return;  // waits for its receive
  startTransfer(id, now);
}

// Each resource of the route serves the transfer in turn, first come first served: a hop starts
// once it is free and the previous hop has started (cut-through), and cannot finish before the
// previous hop (nor, for the first, before the data is produced: minEnd). Between hops there is
// room to wait, so a busy hop downstream never holds one upstream.
void Engine::startTransfer(int32_t id, double now) {
  Msg& m = msgs_[static_cast<size_t>(id)];
  const Connection& c = conns_[static_cast<size_t>(m.conn)];
  const int32_t* route = c.route.hops.data();
  const double bytes = static_cast<double>(m.bytes);
  double s = now, e = m.minEnd, sent = 0;
  for (int32_t h = 0; h < c.route.count; ++h) {
    const int32_t r = route[h];
    const double busy = bytes / rate_[r];
    s = std::max(s, freeAt_[r]);
    e = std::max(s + busy, e);
    freeAt_[r] = e;
    out_.busyUs[r] += busy;
    if (h == 0) sent = e;
    if (rec_ != nullptr) {
      if (rec_->transfers.size() < rec_->limit) {
        rec_->transfers.push_back({r, c.from, c.to, m.bytes, s, e});
      } else {
        ++rec_->dropped;
      }
    }
  }
  m.start = s;  // the last hop's: the receiver sees data from start + latency
  m.end = e;
  if (!m.syncSend) partDone(c.from, m.sendStep, sent);
  if (m.recvStep != kNone) received(id);
}

// The transfer is under way and the receive has begun: when the receiving step has it all (and
// reduced it), when its forward may start, and when a sync send is over.
void Engine::received(int32_t id) {
  Msg& m = msgs_[static_cast<size_t>(id)];
  const Connection& c = conns_[static_cast<size_t>(m.conn)];
  if (m.recvBytes != m.bytes) {
    error_ = internalError(
        "rank {} sends {} bytes to rank {}, which receives {} (steps {} and {}): the schedules "
        "disagree",
        c.from, m.bytes, c.to, m.recvBytes, m.sendStep - p_.first(c.from),
        m.recvStep - p_.first(c.to));
    return;
  }
  const double bytes = static_cast<double>(m.bytes);
  const double piece = std::min(bytes, static_cast<double>(o_.pieceBytes));
  const double arrive = m.start + c.route.latencyUs, arrived = m.end + c.route.latencyUs;
  const double firstPiece = std::max(arrive + piece / c.route.bytesPerUs, m.recvPosted);
  double done = std::max(arrived, m.recvPosted), forwardable = firstPiece;
  if (m.reduces) {
    const double rate = hbm_ / 3;  // two reads and a write per byte
    done = std::max(arrived + piece / rate, std::max(arrive, m.recvPosted) + bytes / rate);
    forwardable = firstPiece + piece / rate;
  }
  partDone(c.to, m.recvStep, done);
  if (m.syncSend) partDone(c.from, m.sendStep, done);
  if (m.forward >= 0) {
    Msg& out = msgs_[static_cast<size_t>(m.forward)];
    const Connection& oc = conns_[static_cast<size_t>(out.conn)];
    out.minEnd = done + std::min(static_cast<double>(out.bytes), piece) / oc.route.bytesPerUs;
    push(forwardable, static_cast<uint32_t>(m.forward), kForward);
  }
  freeMsg(id);
}

void Engine::partDone(int rank, uint32_t step, double t) {
  RankState& rs = ranks_[static_cast<size_t>(rank)];
  rs.groupDone = std::max(rs.groupDone, t);
  if (rec_ != nullptr && step != kNone) stepEnd_[step] = std::max(stepEnd_[step], t);
  if (--rs.pending > 0) return;
  if (rec_ != nullptr) {
    for (uint32_t i = rs.groupFirst; i < rs.next; ++i) {
      if (rec_->steps.size() >= rec_->limit) {
        ++rec_->dropped;
        continue;
      }
      const SimStep& st = steps_[i];
      const int32_t from = st.recvConn >= 0 ? conns_[st.recvConn].from : -1;
      const int32_t to = st.sendConn >= 0 ? conns_[st.sendConn].to : -1;
      rec_->steps.push_back({rank, i - p_.first(rank), st.prim, from, to, st.bytes, rs.groupBegin,
                             std::max(stepEnd_[i], rs.groupBegin)});
    }
  }
  if (rs.next < rs.end) {
    // The next group's steps are read when it begins, after every other rank's events of the
    // meantime: fetch them now, or each begin would wait for memory.
    __builtin_prefetch(&steps_[rs.next]);
    push(rs.groupDone, static_cast<uint32_t>(rank), kBegin);
  } else {
    rs.finished = true;
    out_.rankEndUs[static_cast<size_t>(rank)] = rs.groupDone;
  }
}

Status Engine::checkAllFinished() const {
  for (size_t r = 0; r < ranks_.size(); ++r) {
    const RankState& rs = ranks_[r];
    if (rs.finished) continue;
    const SimStep& st = steps_[rs.groupFirst];
    const int rank = static_cast<int>(r);
    return internalError(
        "deadlock: rank {} waits forever in step {} ({}{}{}) of its schedule, begun at {:.3f} us",
        rank, rs.groupFirst - p_.first(rank), schedule::primitiveName(st.prim),
        st.recvConn >= 0 ? fmt::format(", from rank {}", conns_[st.recvConn].from) : "",
        st.sendConn >= 0 ? fmt::format(", to rank {}", conns_[st.sendConn].to) : "", rs.groupBegin);
  }
  for (size_t c = 0; c < heads_.size(); ++c) {
    if (heads_[c] < 0) continue;
    const bool sent = msgs_[static_cast<size_t>(heads_[c])].sendStep != kNone;
    if (sent) {
      return internalError("rank {} sent rank {} a message it never received", conns_[c].from,
                           conns_[c].to);
    }
    return internalError("rank {} expects a message from rank {} that it never sent", conns_[c].to,
                         conns_[c].from);
  }
  return Status::ok();
}

}  // namespace

Result<Outcome> run(const Program& program, const EngineOptions& options, Recorder* recorder) {
  return Engine(program, options, recorder).run();
}

}  // namespace trnccl::sim
