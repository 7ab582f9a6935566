#include "sim/engine.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/engine_state.h"
#include "sim/event_queue.h"

namespace trnccl::sim {
namespace {

using schedule::Primitive;
using topology::linkByteShare;
using namespace engine_state;  // NOLINT(google-build-using-namespace): its own state

// kBegin: a rank's next group begins. kForward: a forward's first piece is ready to send.
// kHop: a transfer reaches the next hop of its route (the first: once its sender issued it).
enum EventKind : uint32_t { kBegin, kForward, kHop };

class Engine {
 public:
  Engine(const Program& p, const EngineOptions& o, Recorder* rec)
      : p_(p),
        steps_(p.steps()),
        conns_(p.connections()),
        o_(o),
        rec_(rec),
        msgs_(threadTables().msgs, threadTables().second),
        queue_(threadTables().events) {
    queue_.clear();
    const int n = p.nranks();
    ranks_.resize(static_cast<size_t>(n));
    // The rates of the call's working set (the description's bands; without, the resources').
    const Fabric& fabric = p.fabric();
    const uint64_t workingSet = p.workingSet();
    for (const Resource& r : fabric.resources()) {
      const double rate = fabric.bytesPerUs(static_cast<int>(lanes_.size()), workingSet);
      lanes_.push_back(Lane{0, rate, 0, r.messageUs, r.inPlaceBytes});
    }
    for (size_t i = 0; fabric.hasBands() && i < p.routes().size(); ++i) {
      const Route& route = p.routes()[i];
      double rate = lanes_[static_cast<size_t>(route.hops[0])].bytesPerUs;
      for (int32_t h = 1; h < route.count; ++h)
        rate = std::min(rate, lanes_[static_cast<size_t>(route.hops[h])].bytesPerUs);
      routeBytesPerUs_.push_back(rate);
    }
    out_.rankEndUs.assign(static_cast<size_t>(n), 0);
    msgs_.reset(conns_, p.sends());
    hbm_ = fabric.hbmBytesPerUs(workingSet);
    messageUs_ = p.fabric().messageUs();
    freshUs_ = p.fabric().inPlaceFreshUs();
    if (rec_ != nullptr) stepEnd_.assign(steps_.size(), 0);
    for (int r = 0; r < n; ++r) {
      RankState& rs = ranks_[static_cast<size_t>(r)];
      rs.next = p.first(r);
      rs.end = p.end(r);
      if (rs.next < rs.end) {
        push(fabric.callUs(), static_cast<uint32_t>(r), kBegin);
      } else {
        rs.finished = true;
      }
    }
  }

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Result<Outcome> run() {
    while (!queue_.empty() && error_.isOk()) {
      const Event ev = queue_.pop();
      ++out_.events;
      if (const Event* later = queue_.peek(kEventsAhead); later != nullptr) prefetch(*later);
      if (const Event* soon = queue_.peek(kEventsAhead / 2); soon != nullptr) prefetchNext(*soon);
      if (ev.kind == kBegin) {
        beginGroup(static_cast<int>(ev.id), ev.time());
      } else if (ev.kind == kHop) {
        reserveHop(static_cast<int32_t>(ev.id), ev.time());
      } else {
        msgs_[static_cast<int32_t>(ev.id)].set(Msg::kSendReady);
        tryStart(static_cast<int32_t>(ev.id), ev.time());
      }
    }
    if (!error_) return error_;
    TRN_TRY(checkAllFinished());
    out_.messages = msgs_.allocated();
    for (const Lane& l : lanes_) out_.busyUs.push_back(l.busyUs);
    for (size_t r = 0; r < ranks_.size(); ++r)
      out_.timeUs = std::max(out_.timeUs, out_.rankEndUs[r]);
    out_.steps = steps_.size();
    return std::move(out_);
  }

 private:
  void push(double t, uint32_t id, uint32_t kind) { queue_.push(t, id, kind); }

  // A large group (a mesh round: thousands of steps) touches a connection per step, each
  // somewhere else in memory: fetch those of a later step while this one is handled ...
  static constexpr uint32_t kAhead = 16;
  void prefetchStep(const SimStep& st) const {
    for (int32_t c : {st.sendConn, st.recvConn}) {
      if (c >= 0) msgs_.prefetch(c);
    }
  }
  // ... and, once a connection's slot is in cache, its queue's first message when pooled, and
  // its route (a send starts on it, a receive of a message under way finishes on it).
  void prefetchQueues(const SimStep& st) const {
    for (int32_t c : {st.sendConn, st.recvConn}) {
      if (c < 0) continue;
      msgs_.prefetchQueue(c);
      __builtin_prefetch(&route(msgs_[c]));
    }
  }

  // Events at one time (a mesh round's messages, issued together) touch messages all over the
  // table: fetch a later one's while this one is handled.
  static constexpr size_t kEventsAhead = 8;
  // A group's begin reads its first steps and their connections: fetch the steps ...
  void prefetch(const Event& ev) const {
    if (ev.kind != kBegin) {
      msgs_.prefetch(static_cast<int32_t>(ev.id));
    } else {
      __builtin_prefetch(&steps_[ranks_[ev.id].next]);
    }
  }
  // ... and, once those are in cache, what they lead to: a message's route (a large fabric has
  // 100,000s), the connections of a group's first step.
  void prefetchNext(const Event& ev) const {
    if (ev.kind != kBegin) {
      __builtin_prefetch(&route(msgs_[static_cast<int32_t>(ev.id)]));
    } else {
      prefetchStep(steps_[ranks_[ev.id].next]);
    }
  }

  // The message this side's step begins on connection c (Messages::post); error when the other
  // side began it with another size.
  int32_t post(int32_t c, bool sender, uint32_t step, uint64_t bytes) {
    const int32_t id = msgs_.post(c, sender, step, bytes);
    if (msgs_[id].bytes != bytes) mismatch(msgs_[id]);
    return id;
  }
  void mismatch(const Msg& m) {
    error_ = internalError(
        "rank {} sends {} bytes to rank {}, which receives {} (steps {} and {}): the schedules "
        "disagree",
        m.from, uint64_t{steps_[m.sendStep].bytes}, m.to, uint64_t{steps_[m.recvStep].bytes},
        m.sendStep - p_.first(m.from), m.recvStep - p_.first(m.to));
  }

  const Route& route(const Msg& m) const { return p_.routes()[m.route]; }
  // Whether its receiver reads message m in place (a link's in_place_bytes: the shm transport's
  // descriptors), rather than the sender copying it out.
  bool readInPlace(const Msg& m) const { return linkByteShare(route(m).inPlaceBytes, m.bytes) < 1; }
  // What each byte of message m takes at its route's narrowest hop.
  double usPerByte(const Msg& m) const {
    const Route& r = route(m);
    if (routeBytesPerUs_.empty()) return r.usPerByte(m.bytes);
    return linkByteShare(r.inPlaceBytes, m.bytes) / routeBytesPerUs_[m.route];
  }

  void beginGroup(int rank, double now);
  void tryStart(int32_t id, double now);
  void reserveHop(int32_t id, double now);
  // Message id's last hop carries it from start; its receive began at recvPosted.
  void received(int32_t id, double start, double recvPosted);
  void partDone(int rank, uint32_t step, double t);
  Status checkAllFinished() const;

  const Program& p_;
  const Program::Steps& steps_;
  const std::vector<Connection>& conns_;
  const EngineOptions o_;
  Recorder* rec_;
  double hbm_ = 1;
  double messageUs_ = 0;
  double freshUs_ = 0;  // Fabric::inPlaceFreshUs
  std::vector<RankState> ranks_;
  Messages msgs_;                        // and connections
  std::vector<Lane> lanes_;              // per fabric resource
  std::vector<double> routeBytesPerUs_;  // per route, with bands: its narrowest lane's rate
  std::vector<double> stepEnd_;          // with a recorder only
  EventQueue& queue_;                    // the thread's
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
    rs.pending +=
        (st.recvConn >= 0) + (st.sendConn >= 0) + st.has(SimStep::kSecondSend) + local(st.prim());
  }
  // The group's local copies and reductions run one after another on the rank's HBM, as the
  // executor runs them (StepRun::begin, in step order); two at once would share it anyway.
  double localEnd = now;
  for (uint32_t i = first; i <= last && error_.isOk(); ++i) {
    if (i + kAhead <= last) prefetchStep(steps_[i + kAhead]);
    if (i + kAhead / 2 <= last) prefetchQueues(steps_[i + kAhead / 2]);
    const SimStep& st = steps_[i];
    if (local(st.prim())) {  // a copy reads and writes each byte; a reduction reads two
      const double passes = st.prim() == Primitive::kCopy ? 2.0 : 3.0;
      if (st.flags & SimStep::kMovesData) localEnd += passes * static_cast<double>(st.bytes) / hbm_;
      partDone(rank, i, localEnd);
      continue;
    }
    int32_t out = -1, out2 = -1;
    const bool sync = st.flags & SimStep::kSyncSend;
    if (st.sendConn >= 0) {
      out = post(st.sendConn, true, i, st.bytes);
      msgs_[out].set(Msg::kSyncSend, sync);
    }
    if (st.has(SimStep::kSecondSend)) {
      out2 = post(p_.secondConn(i), true, i, st.bytes);
      msgs_[out2].set(Msg::kSyncSend, sync);
      msgs_.setSecond(out, out2);
    }
    if (st.recvConn >= 0) {
      const int32_t in = post(st.recvConn, false, i, st.bytes);
      Msg& m = msgs_[in];
      m.set(Msg::kReduces, st.flags & SimStep::kReduces);
      m.forward = out;
      if (m.has(Msg::kLastHop)) {
        received(in, m.when, now);
      } else {
        m.when = now;
        if (m.has(Msg::kSendReady)) tryStart(in, now);  // a large send waited for this receive
        if (m.has(Msg::kInPlace) && m.hop == 0) reserveHop(in, now);  // issued, read from now
      }
    }
    if (st.prim() == Primitive::kSend) {
      for (int32_t o : {out, out2}) {
        if (o < 0) continue;
        msgs_[o].set(Msg::kSendReady);
        tryStart(o, now);
      }
    }
  }
  // The next group's connections, while the rank waits for this one (its steps are adjacent:
  // in cache).
  if (last + 1 < rs.end) prefetchStep(steps_[last + 1]);
  partDone(rank, kNone, now);
}

void Engine::tryStart(int32_t id, double now) {
  Msg& m = msgs_[id];
  if (m.has(Msg::kStarted) || !m.has(Msg::kSendReady)) return;
  // A large send waits for its receive; one read in place is a descriptor, which needs no room.
  if (m.recvStep == kNone && m.bytes > o_.eagerBytes && !readInPlace(m)) return;
  m.set(Msg::kStarted);
  if (messageUs_ > 0 && lanes_[static_cast<size_t>(route(m).hops[0])].messageUs <= 0) {
    // Issued by its sender's DMA queue, then its first hop asked for, in time order (an event).
    RankState& sender = ranks_[static_cast<size_t>(m.from)];
    sender.issueFreeAt = std::max(now, sender.issueFreeAt) + messageUs_;
    push(sender.issueFreeAt, static_cast<uint32_t>(id), kHop);
    return;
  }
  reserveHop(id, now);
}

// Each resource of the route serves the transfer in turn, first come first served: a hop is
// asked for when the data reaches it (at the previous hop's start: cut-through, an event, so
// that requests reach a resource in time order), starts once free, and cannot finish before the
// previous hop (nor, the first, before the data is produced: bound). Between hops there is
// room to wait, so a busy hop downstream never holds one upstream.
void Engine::reserveHop(int32_t id, double now) {
  Msg& m = msgs_[id];
  if (m.hop == 0 && !m.has(Msg::kInPlace) && readInPlace(m)) {
    // Issued as a descriptor: the sender's part is over (the executor's send is done once the
    // transport took it), and its bytes move only as the receiver reads them, in its receive.
    m.set(Msg::kInPlace);
    if (!m.has(Msg::kSyncSend)) partDone(m.from, m.sendStep, now);
    if (m.recvStep == kNone) return;  // beginGroup reserves the hop when the receive begins
  }
  if (m.hop == 0 && m.has(Msg::kInPlace) && steps_[m.sendStep].has(SimStep::kFreshSend)) {
    // Lines another core has just written: reading them takes at least freshUs, however few
    // they are; the pass's other streams (a slower memory) overlap it.
    m.bound = std::max(m.bound, now + freshUs_);
  }
  const Route& path = route(m);
  const int32_t r = path.hops[m.hop];
  Lane& lane = lanes_[static_cast<size_t>(r)];
  double busy =
      linkByteShare(lane.inPlaceBytes, m.bytes) * static_cast<double>(m.bytes) / lane.bytesPerUs;
  if (m.hop == 0) busy += lane.messageUs;  // an EFA NIC's send queue takes it
  const double s = std::max(now, lane.freeAt);
  const double e = std::max(s + busy, m.bound);
  lane.freeAt = e;
  lane.busyUs += busy;
  if (rec_ != nullptr) {
    if (rec_->transfers.size() < rec_->limit) {
      rec_->transfers.push_back({r, m.from, m.to, m.bytes, s, e});
    } else {
      ++rec_->dropped;
    }
  }
  if (m.hop == 0 && !m.has(Msg::kSyncSend) && !m.has(Msg::kInPlace)) {
    partDone(m.from, m.sendStep, e);  // it has left
  }
  m.bound = e;
  if (++m.hop < static_cast<uint64_t>(path.count)) {
    push(s, static_cast<uint32_t>(id), kHop);
    return;
  }
  if (m.recvStep != kNone) {  // the receiver sees data from s + latency
    received(id, s, m.when);
  } else {
    m.when = s;
    m.set(Msg::kLastHop);
  }
}

// The transfer is under way and the receive has begun: when the receiving step has it all (and
// reduced it), when its forward may start, and when a sync send is over.
void Engine::received(int32_t id, double start, double recvPosted) {
  Msg& m = msgs_[id];
  const double bytes = static_cast<double>(m.bytes);
  const double piece = std::min(bytes, static_cast<double>(o_.pieceBytes));
  const double latency = route(m).latencyUs;
  // A reduction of a message that came through the FIFO of a link that reads larger ones in
  // place (the shm transport) reads the FIFO where its sender copied it (the executor's consumer:
  // schedule/step_run.h): the receiver's copy out of it, half the link's time, is never made.
  const bool fromFifo = m.has(Msg::kReduces) && !m.has(Msg::kInPlace) && route(m).inPlaceBytes > 0;
  const double copyOut = fromFifo ? 0.5 : 0.0;
  const double arrive = start + latency;
  const double arrived = std::max(arrive, m.bound - copyOut * bytes * usPerByte(m) + latency);
  const double firstPiece = std::max(arrive + (1 - copyOut) * piece * usPerByte(m), recvPosted);
  double done = std::max(arrived, recvPosted), forwardable = firstPiece;
  if (m.has(Msg::kReduces)) {
    const double rate = hbm_ / 3;  // two reads and a write per byte
    const double from = std::max(arrive, recvPosted);
    if (m.has(Msg::kInPlace)) {
      // The reduction reads the sender's bytes where they are: it is the transfer's one pass,
      // as slow as the slower of the two, not a pass after it.
      done = std::max(arrived, from + bytes / rate);
    } else {
      done = std::max(arrived + piece / rate, from + bytes / rate);
      forwardable = firstPiece + piece / rate;
    }
  }
  // The executor takes a descriptor's bytes whole (one piece of the transport): what a step
  // forwards of a message read in place is there once it is all read.
  if (m.has(Msg::kInPlace)) forwardable = done;
  partDone(m.to, m.recvStep, done);
  if (m.has(Msg::kSyncSend)) partDone(m.from, m.sendStep, done);
  // The forward, and a duplicated write's second one, stream the same pieces.
  for (int32_t f = m.forward; f >= 0; f = msgs_.second(f)) {
    Msg& out = msgs_[f];
    out.bound = done + std::min(static_cast<double>(out.bytes), piece) * usPerByte(out);
    push(forwardable, static_cast<uint32_t>(f), kForward);
  }
  msgs_.release(id);
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
      rec_->steps.push_back({rank, i - p_.first(rank), st.prim(), from, to, st.bytes, rs.groupBegin,
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
        rank, rs.groupFirst - p_.first(rank), schedule::primitiveName(st.prim()),
        st.recvConn >= 0 ? fmt::format(", from rank {}", conns_[st.recvConn].from) : "",
        st.sendConn >= 0 ? fmt::format(", to rank {}", conns_[st.sendConn].to) : "", rs.groupBegin);
  }
  for (size_t c = 0; c < conns_.size(); ++c) {
    const int32_t head = msgs_.head(static_cast<int32_t>(c));
    if (head < 0) continue;
    if (msgs_[head].sendStep != kNone) {
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
