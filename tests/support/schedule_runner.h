// Runs every rank's schedule of one collective in this thread, against FIFOs of a given
// capacity between ranks, the way the executor does (src/schedule/executor.cc): the steps of a
// group begin together, a directed connection carries its messages in the order their steps
// begin, received pieces are reduced or copied as they arrive, forwarding primitives send what
// they produced so far, and a step is over once all its bytes were received and taken by the
// FIFOs. It polls the ranks round-robin until every schedule finished, or until no rank can
// move: a deadlock, which it describes. Each rank's scratch space is backed by memory, as the
// executor backs it. For unit tests of schedules at rank counts threads
// could not run (hundreds of ranks), with the data checked afterwards.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "schedule/schedule.h"

namespace trnccl::testing {

class ScheduleRunner {
 public:
  // `fifoBytes`: what a directed connection holds before its receiver takes any (each message
  // also costs kMessageOverhead, as the shm FIFO's records do).
  static constexpr size_t kMessageOverhead = 64;

  ScheduleRunner(const std::vector<schedule::Schedule>& schedules, size_t fifoBytes)
      : s_(schedules), fifoBytes_(fifoBytes), ranks_(schedules.size()) {
    scratch_.reserve(schedules.size());
    for (const schedule::Schedule& s : schedules) scratch_.emplace_back(s.scratchBytes());
  }

  // True when every schedule finished; otherwise `stuck()` says where each rank waits. Polls a
  // rank again only when it moved or a FIFO it uses changed (the peers it touched are woken).
  bool run() {
    std::deque<size_t> ready;
    queued_.assign(ranks_.size(), true);
    for (size_t r = 0; r < ranks_.size(); ++r) {
      startGroup(r);
      ready.push_back(r);
    }
    while (!ready.empty() && error_.empty()) {
      const size_t r = ready.front();
      ready.pop_front();
      queued_[r] = false;
      woken_.clear();
      if (pollRank(r)) woken_.push_back(static_cast<int>(r));
      for (int w : woken_) {
        if (!queued_[w]) {
          queued_[w] = true;
          ready.push_back(static_cast<size_t>(w));
        }
      }
    }
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (ranks_[r].first < s_[r].steps().size()) return false;
    }
    return error_.empty();
  }

  std::string stuck() const {
    std::string out = error_;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const Rank& k = ranks_[r];
      if (k.first >= s_[r].steps().size()) continue;
      out += fmt::format("rank {} at step {}:", r, k.first);
      for (const Run& run : k.runs) {
        const schedule::Step& st = *run.step;
        out += fmt::format(" [{} recv {} send {},{} got {}/{} sent {}]",
                           schedule::primitiveName(st.prim), st.recvPeer, st.sendPeer, st.sendPeer2,
                           run.received, run.bytes, run.sent[0]);
      }
      out += "\n";
    }
    return out;
  }

 private:
  struct Message {
    size_t bytes = 0;
    std::vector<std::byte> data;  // what the sender put so far
    size_t taken = 0;             // by the receiver
  };
  struct Fifo {
    std::deque<Message> messages;  // in begin order
    size_t queued = 0;             // bytes put and not taken, plus overheads
    size_t beginsRecv = 0;         // messages the receiver began
    size_t popped = 0;             // messages taken whole
  };
  struct Run {
    const schedule::Step* step = nullptr;
    const void* src = nullptr;  // the step's addresses, scratch space mapped to memory
    void* dst = nullptr;
    size_t bytes = 0, received = 0, produced = 0;
    size_t sent[2] = {0, 0};
    Message* out[2] = {nullptr, nullptr};
    Fifo* outFifo[2] = {nullptr, nullptr};
    Fifo* in = nullptr;
    size_t inIndex = 0;  // which message of `in` is ours
  };
  struct Rank {
    size_t first = 0, last = 0;  // the current group
    std::vector<Run> runs;
  };

  Fifo& fifo(int from, int to) { return fifos_[{from, to}]; }

  void startGroup(size_t r) {
    Rank& k = ranks_[r];
    const auto& steps = s_[r].steps();
    k.runs.clear();
    if (k.first >= steps.size()) return;
    k.last = k.first;
    while (k.last + 1 < steps.size() && steps[k.last].withNext) ++k.last;
    const size_t elem = device::dataTypeSize(s_[r].type);
    for (size_t i = k.first; i <= k.last; ++i) {
      Run run;
      run.step = &steps[i];
      run.src = scratch_[r].map(steps[i].src);
      run.dst = scratch_[r].map(steps[i].dst);
      run.bytes = steps[i].count * elem;
      beginLocal(r, run);
      if (schedule::receives(run.step->prim)) {
        run.in = &fifo(run.step->recvPeer, static_cast<int>(r));
        run.inIndex = run.in->beginsRecv++;
      }
      if (schedule::sends(run.step->prim)) {
        int peers[2] = {run.step->sendPeer, run.step->sendPeer2};
        for (int j = 0; j < 2; ++j) {
          if (peers[j] < 0) continue;
          Fifo& f = fifo(static_cast<int>(r), peers[j]);
          f.messages.push_back(Message{run.bytes, {}, 0});
          f.queued += kMessageOverhead;
          run.out[j] = &f.messages.back();
          run.outFifo[j] = &f;
        }
      }
      k.runs.push_back(run);
    }
  }

  // kCopy and kReduce run when their group begins, as the executor does.
  void beginLocal(size_t r, Run& run) {
    const schedule::Step& st = *run.step;
    if (st.prim == schedule::Primitive::kCopy) {
      if (run.dst != run.src) std::memmove(run.dst, run.src, run.bytes);
    } else if (st.prim == schedule::Primitive::kReduce) {
      device::reduce(s_[r].type, s_[r].op, run.dst, run.dst, run.src, st.count);
      if (st.postOp) device::divide(s_[r].type, run.dst, run.dst, st.count, s_[r].nranks);
    }
  }

  bool pollRank(size_t r) {
    Rank& k = ranks_[r];
    if (k.first >= s_[r].steps().size()) return false;
    bool progressed = false, done = true;
    for (Run& run : k.runs) {
      progressed = pollRun(r, run) || progressed;
      done = done && finished(run);
    }
    if (done) {
      k.first = k.last + 1;
      startGroup(r);
      progressed = true;
    }
    return progressed;
  }

  static bool finished(const Run& run) {
    const bool recv = !schedule::receives(run.step->prim) || run.received == run.bytes;
    bool sent = true;
    for (int j = 0; j < 2; ++j) sent = sent && (run.out[j] == nullptr || run.sent[j] == run.bytes);
    return recv && sent;
  }

  bool pollRun(size_t r, Run& run) {
    const schedule::Step& st = *run.step;
    const size_t elem = device::dataTypeSize(s_[r].type);
    bool progressed = false;
    if (run.in != nullptr && run.received < run.bytes) {
      // Our message is the head of the FIFO once every earlier one was taken whole.
      Fifo& f = *run.in;
      if (!f.messages.empty() && f.popped == run.inIndex) {
        Message& m = f.messages.front();
        if (m.bytes != run.bytes && error_.empty()) {
          error_ = fmt::format("rank {} expects {} bytes from rank {}, which sends {}\n", r,
                               run.bytes, st.recvPeer, m.bytes);
        }
        const size_t avail = (m.data.size() - m.taken) / elem * elem;
        if (avail > 0) {
          consume(r, run, m.data.data() + m.taken, avail);
          m.taken += avail;
          f.queued -= avail;
          progressed = true;
          woken_.push_back(st.recvPeer);  // room for the sender
        }
        if (m.taken == m.bytes) {
          f.queued -= kMessageOverhead;
          f.messages.pop_front();
          ++f.popped;
        }
      }
    }
    const bool forwards = schedule::receives(st.prim);
    const size_t ready = forwards ? run.produced : run.bytes;
    const auto* from = static_cast<const std::byte*>(
        st.prim == schedule::Primitive::kSend ? run.src : static_cast<const void*>(run.dst));
    for (int j = 0; j < 2; ++j) {
      if (run.out[j] == nullptr || run.sent[j] >= ready) continue;
      Fifo& f = *run.outFifo[j];
      const size_t room = f.queued < fifoBytes_ ? fifoBytes_ - f.queued : 0;
      const size_t n = std::min(room, ready - run.sent[j]);
      if (n == 0) continue;
      run.out[j]->data.insert(run.out[j]->data.end(), from + run.sent[j], from + run.sent[j] + n);
      run.sent[j] += n;
      f.queued += n;
      progressed = true;
      woken_.push_back(j == 0 ? st.sendPeer : st.sendPeer2);  // data for the receiver
    }
    return progressed;
  }

  void consume(size_t r, Run& run, const std::byte* p, size_t n) {
    const schedule::Step& st = *run.step;
    auto* dst = static_cast<std::byte*>(run.dst) + run.received;
    if (st.prim == schedule::Primitive::kRecv || st.prim == schedule::Primitive::kRecvCopySend) {
      std::memcpy(dst, p, n);
    } else {
      const size_t elem = device::dataTypeSize(s_[r].type);
      const auto* src = static_cast<const std::byte*>(run.src) + run.received;
      if (st.incomingFirst) {
        device::reduce(s_[r].type, s_[r].op, dst, p, src, n / elem);
      } else {
        device::reduce(s_[r].type, s_[r].op, dst, src, p, n / elem);
      }
      if (st.postOp) device::divide(s_[r].type, dst, dst, n / elem, s_[r].nranks);
    }
    run.received += n;
    run.produced = run.received;
  }

  const std::vector<schedule::Schedule>& s_;
  size_t fifoBytes_;
  std::vector<schedule::ScratchMemory> scratch_;  // per rank, behind its schedule's scratch
  std::vector<Rank> ranks_;
  std::map<std::pair<int, int>, Fifo> fifos_;
  std::vector<bool> queued_;  // in the ready queue
  std::vector<int> woken_;    // peers the current poll gave data or room
  std::string error_;
};

}  // namespace trnccl::testing
