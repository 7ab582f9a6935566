// The state of one step of a schedule while the executor runs it (private to executor.cc: it
// uses the transports, which the layers above the executor never see).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "schedule/executor.h"
#include "schedule/schedule.h"
#include "transports/core/transport.h"

namespace trnccl::schedule::detail {

using transport::Connection;

// The connection to `peer`; nullptr for none (self, or a peer outside the communicator).
inline Connection* connection(const ExecContext& ctx, int peer) {
  return peer >= 0 && static_cast<size_t>(peer) < ctx.conns.size() ? ctx.conns[peer] : nullptr;
}

// The state of one step while it runs.
class StepRun {
 public:
  // `run`: what the schedule's Layout resolved of the step once for every call.
  StepRun(const Schedule& s, const Step& step, const Layout::Run& run, const ScratchMemory& scratch)
      : s_(s),
        step_(step),
        src_(run.mapSrc ? scratch.map(step.src) : step.src),
        dst_(run.mapDst ? scratch.map(step.dst) : step.dst),
        elem_(device::dataTypeSize(s.type)),
        bytes_(step.count * elem_),
        copies_(run.copies),
        // A small reducing step has what arrives put in stage_ and reduces from there: one more
        // copy of at most kStagedBytes costs less than the consumer's calls (std::function, the
        // transport's own staging), ~100 instructions per call of a 2-rank all-reduce.
        staged_(receives(step.prim) && !run.copies && bytes_ <= kStagedBytes) {}

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
      const bool copies = copies_, staged = staged_;
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
  bool copies_ = false, staged_ = false;
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

}  // namespace trnccl::schedule::detail
