#include "schedule/executor.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "common/log.h"
#include "common/sleeper.h"
#include "transports/core/transport.h"
#include "transports/core/waiting.h"

namespace trnccl::schedule {
namespace {

using transport::Connection;

constexpr auto kMaxSleep = std::chrono::milliseconds(5);
constexpr auto kPeerCheckEvery = std::chrono::milliseconds(50);
// Every this many peer checks, every link of the communicator too (~5 per second while stuck).
constexpr int kLinkCheckEvery = 4;
constexpr unsigned kPollsPerClockRead = 16;

// The connection to `peer`; nullptr for none (self, or a peer outside the communicator).
Connection* connection(const ExecContext& ctx, int peer) {
  return peer >= 0 && static_cast<size_t>(peer) < ctx.conns.size() ? ctx.conns[peer] : nullptr;
}

// The state of one step while it runs.
class StepRun {
 public:
  StepRun(const Schedule& s, const Step& step, const ScratchMemory& scratch)
      : s_(s), step_(step), src_(scratch.map(step.src)), dst_(scratch.map(step.dst)) {
    elem_ = device::dataTypeSize(s.type);
    bytes_ = step.count * elem_;
  }

  // `m`: the step's message numbers within the call (Layout), for collectives' tags.
  Status begin(const ExecContext& ctx, const Layout::Messages& m) {
    if (step_.prim == Primitive::kCopy) {
      if (dst_ != src_) std::memmove(dst_, src_, bytes_);
      recvDone_ = sendDone_ = true;
      return Status::ok();
    }
    if (step_.prim == Primitive::kReduce) {  // dst = dst (op) src: the accumulator comes first
      device::reduce(s_.type, s_.op, dst_, dst_, src_, step_.count);
      if (step_.postOp) device::divide(s_.type, dst_, dst_, step_.count, s_.nranks);
      recvDone_ = sendDone_ = true;
      return Status::ok();
    }
    if (receives(step_.prim)) {
      in_ = connection(ctx, step_.recvPeer);
      if (in_ == nullptr) return internalError("no connection to rank {}", step_.recvPeer);
      uint64_t tag =
          s_.p2p ? p2pTag((*ctx.p2pReceived)[step_.recvPeer]++) : messageTag(ctx.seq, m.recv);
      TRN_TRY(in_->beginRecv(tag, bytes_));
    } else {
      recvDone_ = true;
    }
    if (sends(step_.prim)) {
      TRN_TRY(out_[0].begin(ctx, s_.p2p, step_.sendPeer, m.send, bytes_));
      if (step_.sendPeer2 >= 0) {
        TRN_TRY(out_[1].begin(ctx, s_.p2p, step_.sendPeer2, m.send2, bytes_));
      }
    } else {
      sendDone_ = true;
    }
    return Status::ok();
  }

  bool done() const { return recvDone_ && sendDone_; }
  // The connections this step sent on (nullptr when unused).
  std::array<Connection*, 2> senders() const { return {out_[0].conn, out_[1].conn}; }

  // Moves whatever can move now; sets `progressed` when anything did.
  Status poll(bool& progressed) {
    if (!recvDone_) {
      // A step that only copies what arrives lets the transport put it in place (recvInto).
      const bool copies = step_.prim == Primitive::kRecv || step_.prim == Primitive::kRecvCopySend;
      // A small reducing step has it put in stage_ and reduces from there: one more copy of at
      // most kStagedBytes costs less than the consumer's calls (std::function, the transport's
      // own staging), ~100 instructions per call of a 2-rank all-reduce.
      const bool staged = !copies && bytes_ <= kStagedBytes;
      if (!copies && !staged && !consumer_) {  // once per step, not per poll (a std::function)
        consumer_ = [this](size_t off, const std::byte* p, size_t n) { consume(off, p, n); };
      }
      std::byte* into = copies ? static_cast<std::byte*>(dst_) : stage_;
      Result<size_t> got = copies || staged ? in_->recvInto(into, bytes_ - received_)
                                            : in_->recvSome(bytes_ - received_, consumer_);
      if (!got) return got.status();
      if (*got > 0) progressed = true;
      received_ += *got;
      if (copies) produced_ = received_;
      if (staged && received_ - produced_ >= elem_) {  // whole elements only; stage_ is aligned
        applyAligned(produced_, stage_ + produced_, (received_ - produced_) / elem_);
      }
      recvDone_ = received_ == bytes_;
    }
    if (!sendDone_) {
      // Both destinations of a duplicated write take the same bytes as they are produced.
      const size_t ready = receives(step_.prim) ? produced_ : bytes_;
      const auto* from =
          static_cast<const std::byte*>(step_.prim == Primitive::kSend ? src_ : dst_);
      bool all = true;
      for (Outgoing& o : out_) {
        if (o.conn == nullptr) continue;
        TRN_TRY(o.poll(from, ready, bytes_, step_.syncSend, progressed));
        all = all && o.done;
      }
      sendDone_ = all;
    }
    return Status::ok();
  }

 private:
  // Applies the primitive to received bytes [off, off+n). Pieces may split an element (a
  // transport's buffer wraps anywhere); a partial element waits in carry_.
  void consume(size_t off, const std::byte* p, size_t n) {
    if (step_.prim == Primitive::kRecv || step_.prim == Primitive::kRecvCopySend) {
      std::memcpy(static_cast<std::byte*>(dst_) + off, p, n);
      produced_ = off + n;
      return;
    }
    if (carried_ > 0) {
      size_t take = std::min(n, elem_ - carried_);
      std::memcpy(carry_ + carried_, p, take);
      carried_ += take;
      p += take;
      off += take;
      n -= take;
      if (carried_ < elem_) return;
      apply(off - elem_, carry_, 1);
      carried_ = 0;
    }
    size_t whole = n / elem_;
    if (whole > 0) apply(off, p, whole);
    size_t rest = n - whole * elem_;
    if (rest > 0) {
      std::memcpy(carry_, p + whole * elem_, rest);
      carried_ = rest;
    }
  }

  void apply(size_t off, const std::byte* in, size_t elems) {
    // The kernels read typed elements; a piece that starts off an element boundary (a TCP
    // staging buffer can hand one over) is first copied to aligned memory, a chunk at a time.
    if (reinterpret_cast<uintptr_t>(in) % elem_ != 0) {
      constexpr size_t kChunk = 64 * 1024;
      thread_local std::vector<uint64_t> aligned(kChunk / sizeof(uint64_t));
      const size_t perChunk = kChunk / elem_;
      for (size_t done = 0; done < elems; done += perChunk) {
        size_t n = std::min(perChunk, elems - done);
        std::memcpy(aligned.data(), in + done * elem_, n * elem_);
        applyAligned(off + done * elem_, reinterpret_cast<const std::byte*>(aligned.data()), n);
      }
      return;
    }
    applyAligned(off, in, elems);
  }

  void applyAligned(size_t off, const std::byte* in, size_t elems) {
    auto* dst = static_cast<std::byte*>(dst_) + off;
    const auto* src = static_cast<const std::byte*>(src_) + off;
    if (step_.incomingFirst) {
      device::reduce(s_.type, s_.op, dst, in, src, elems);
    } else {
      device::reduce(s_.type, s_.op, dst, src, in, elems);
    }
    if (step_.postOp) device::divide(s_.type, dst, dst, elems, s_.nranks);
    produced_ = off + elems * elem_;
  }

  const Schedule& s_;
  const Step& step_;
  const void* src_;  // the step's addresses, scratch space mapped to memory
  void* dst_;
  size_t elem_ = 1;
  size_t bytes_ = 0;
  // One destination of the step's sends.
  struct Outgoing {
    Connection* conn = nullptr;
    size_t sent = 0;  // bytes the transport took
    bool done = false;

    Status begin(const ExecContext& ctx, bool p2p, int peer, uint32_t message, size_t bytes) {
      conn = connection(ctx, peer);
      if (conn == nullptr) return internalError("no connection to rank {}", peer);
      uint64_t tag = p2p ? p2pTag((*ctx.p2pSent)[peer]++) : messageTag(ctx.seq, message);
      return conn->beginSend(tag, bytes);
    }

    // Offers what is ready of `from`; done once all `bytes` were taken (and, with syncSend,
    // released by the peer).
    Status poll(const std::byte* from, size_t ready, size_t bytes, bool sync, bool& progressed) {
      if (done) return Status::ok();
      if (ready > sent) {
        Result<size_t> took = conn->sendSome(from + sent, ready - sent);
        if (!took) return took.status();
        if (*took > 0) progressed = true;
        sent += *took;
      }
      done = sent == bytes;
      if (done && sync) {
        Result<bool> released = conn->sendDone();
        if (!released) return released.status();
        done = *released;
      }
      return Status::ok();
    }
  };

  Connection* in_ = nullptr;
  std::array<Outgoing, 2> out_;  // sendPeer, and sendPeer2 when the write is duplicated
  size_t received_ = 0;          // bytes handed to consume()
  size_t produced_ = 0;          // bytes of dst complete (what a forwarding send may send)
  bool recvDone_ = false;
  bool sendDone_ = false;
  transport::Consumer consumer_;  // consume(), for transports; the step's address is stable
  std::byte carry_[16];           // no zero fill: carried_ says how much is there
  size_t carried_ = 0;
  static constexpr size_t kStagedBytes = 256;
  alignas(64) std::byte stage_[kStagedBytes];  // no zero fill: a small reducing step's arrivals
};

// This rank's own links, all of them: a rank stuck on a live but blocked peer (shm) notices
// that one of its network links failed, which no peer of this wait may ever report.
Status checkLinks(const ExecContext& ctx) {
  for (Connection* c : ctx.conns) {
    if (c == nullptr) continue;
    Status s = c->checkLink();
    if (!s) return Status(s.code(), fmt::format("{}: {}", ctx.what.str(), s.message()), c->peer());
  }
  return Status::ok();
}

// Waits until `ready()` is true, polling with `poll` and waiting (waiting.h) in between;
// fails on abort, deadline or a dead peer.
template <typename Poll, typename Ready>
Status progressUntil(const ExecContext& ctx, std::span<const int> peers, Poll poll, Ready ready) {
  // The first poll, before any wait state is set up: a small call's step often completes in it
  // (its sends go at once, its data may be there), and the wait state (the policy, this
  // thread's budget, a thread_local of a shared library) cost ~80 instructions per step.
  uint32_t seen = ctx.bell->snapshot();
  bool progressed = false;
  TRN_TRY(poll(progressed));
  if (ready()) return Status::ok();
  thread_local YieldBudget budget;  // this worker's waits for peers (common/backoff.h)
  Backoff backoff(WaitPolicy::process(), &budget);
  auto nextPeerCheck = Clock::time_point::min();  // set at the first clock read
  int peerChecks = 0;
  unsigned idlePolls = 0;
  for (bool polled = true;; polled = false) {
    if (!polled) {
      seen = ctx.bell->snapshot();
      progressed = false;
      TRN_TRY(poll(progressed));
      if (ready()) return Status::ok();
    }
    if (progressed) {
      backoff.reset();
      continue;
    }
    if (ctx.abortFlag != nullptr && ctx.abortFlag->load(std::memory_order_relaxed)) {
      return Status(Code::kRemoteError, fmt::format("{}: communicator aborted", ctx.what.str()));
    }
    const bool spin = backoff.next();
    // The clock only every kPollsPerClockRead idle polls and before every sleep (a read per
    // poll was ~10 % of a stream worker's samples); the spins between are bounded by Backoff.
    if (spin && ++idlePolls % kPollsPerClockRead != 0) continue;
    const auto now = Clock::now();
    if (nextPeerCheck == Clock::time_point::min()) nextPeerCheck = now + kPeerCheckEvery;
    if (now >= ctx.deadline.at()) {
      std::string who;
      for (int p : peers) who += fmt::format("{}{}", who.empty() ? "" : ",", p);
      return Status(Code::kTimeout,
                    fmt::format("{}: timed out on rank {} waiting for peer(s) {}", ctx.what.str(),
                                ctx.rank, who),
                    peers.empty() ? -1 : peers.front());
    }
    if (now >= nextPeerCheck) {
      for (int p : peers) {
        Status s = ctx.conns[p]->checkPeer();
        if (!s) return Status(s.code(), fmt::format("{}: {}", ctx.what.str(), s.message()), p);
      }
      if (++peerChecks % kLinkCheckEvery == 0) TRN_TRY(checkLinks(ctx));
      if (ctx.health) {
        Status s = ctx.health();
        if (!s)
          return Status(s.code(), fmt::format("{}: {}", ctx.what.str(), s.message()), s.peer());
      }
      nextPeerCheck = Clock::now() + kPeerCheckEvery;
    }
    if (spin) continue;
    // Announce the sleep, then poll once more: shm LL senders ring only announced sleepers.
    DoorbellSleeper sleeper(*ctx.bell);
    TRN_TRY(poll(progressed));
    if (ready()) return Status::ok();
    if (progressed) {
      backoff.reset();
      continue;
    }
    // On the peers' sockets when they are all TCP, else on the doorbell (waiting.h).
    thread_local std::vector<Connection*> waitOn;
    waitOn.clear();
    for (int p : peers) waitOn.push_back(ctx.conns[p]);
    auto left = ctx.deadline.remaining();
    transport::waitForNews(waitOn, sleeper, seen,
                           std::min<std::chrono::microseconds>(left, kMaxSleep));
  }
}

// Per-thread bookkeeping of execute(), kept between calls.
struct Buffers {
  std::vector<Connection*> unfinished;
  std::vector<StepRun> runs;
  std::vector<int> peers;
};

// This thread's Buffers. Not inlined: the address of a thread_local of a shared library costs a
// __tls_get_addr call, which the compiler repeated at many uses inside execute() (~5 % of the
// samples of a 2-rank 8-byte all-reduce); through the reference returned it is computed once.
[[gnu::noinline]] Buffers& threadBuffers() {
  thread_local Buffers buffers;
  return buffers;
}

}  // namespace

std::string CallName::str() const {
  return algorithm == nullptr ? std::string(call)
                              : fmt::format("{} #{} ({})", call, seq, algorithm);
}

Status execute(const Schedule& schedule, const ExecContext& ctx) {
  if (log::enabled(log::Level::kTrace, log::kSched)) {
    TRN_TRACE(kSched, "{} rank {}: {}", ctx.what.str(), ctx.rank, schedule.dump());
  }
  const ScratchMemory scratch(schedule.scratchBytes(), ctx.scratch);
  // Groups, their peers and the steps' message numbers are the schedule's, derived once.
  const Layout& layout = schedule.layout();
  // The run's bookkeeping reuses this thread's buffers: no allocation per call once they have
  // grown (a stream worker runs one schedule at a time).
  Buffers& b = threadBuffers();
  auto& unfinished = b.unfinished;  // connections that may still read a source buffer
  auto& runs = b.runs;
  auto& peers = b.peers;
  unfinished.clear();
  const auto& steps = schedule.steps();
  for (const Layout::Group& group : layout.groups) {
    runs.clear();
    runs.reserve(group.last - group.first + 1);  // no reallocation: a StepRun's address is stable
    for (uint32_t i = group.first; i <= group.last; ++i) {
      runs.emplace_back(schedule, steps[i], scratch);
      TRN_TRY(runs.back().begin(ctx, layout.messages[i]));
    }
    TRN_TRY(progressUntil(
        ctx, layout.peersOf(group),
        [&](bool& progressed) {
          for (auto& run : runs) TRN_TRY(run.poll(progressed));
          // Keep driving earlier sends too: with manual progress (libfabric) their bytes leave
          // this rank only while we poll the connection, and the current steps may use other
          // connections (shm) whose peers wait, through the ring, for exactly those bytes.
          for (auto it = unfinished.begin(); it != unfinished.end();) {
            Result<bool> d = (*it)->sendDone();
            if (!d) return d.status();
            it = *d ? unfinished.erase(it) : it + 1;
          }
          return Status::ok();
        },
        [&] { return std::all_of(runs.begin(), runs.end(), [](auto& r) { return r.done(); }); }));
    // A connection whose sends are already released (an shm LL message is, once written) is
    // not watched any further: most small calls never fill `unfinished`.
    for (auto& run : runs) {
      for (Connection* c : run.senders()) {
        if (c == nullptr ||
            std::find(unfinished.begin(), unfinished.end(), c) != unfinished.end()) {
          continue;
        }
        Result<bool> d = c->sendDone();
        if (!d) return d.status();
        if (!*d) unfinished.push_back(c);
      }
    }
  }
  // The caller may reuse its buffers once we return: wait until no peer still reads them.
  peers.clear();
  for (Connection* c : unfinished) peers.push_back(c->peer());
  bool allDone = unfinished.empty();
  return progressUntil(
      ctx, peers,
      [&](bool&) {
        allDone = true;
        for (Connection* c : unfinished) {
          Result<bool> d = c->sendDone();
          if (!d) return d.status();
          allDone = allDone && *d;
        }
        return Status::ok();
      },
      [&] { return allDone; });
}

}  // namespace trnccl::schedule
