#include "schedule/executor.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <vector>

#include "common/log.h"
#include "common/sleeper.h"
#include "schedule/step_run.h"
#include "transports/core/transport.h"
#include "transports/core/waiting.h"

namespace trnccl::schedule {
namespace {

using detail::Connection;
using detail::connection;
using detail::StepRun;

constexpr auto kMaxSleep = std::chrono::milliseconds(5);
constexpr auto kPeerCheckEvery = std::chrono::milliseconds(50);
// Every this many peer checks, every link of the communicator too (~5 per second while stuck).
constexpr int kLinkCheckEvery = 4;
constexpr unsigned kPollsPerClockRead = 16;

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
      if (ctx.health != nullptr) {
        Status s = ctx.health(ctx.healthArg);
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

// Per-thread bookkeeping of execute(), kept between calls, for what does not fit in its frame:
// groups of more than GroupRuns::kInline steps, and sends still unfinished after their group.
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

// The runs of the group being executed, at stable addresses (a run's consumer points to it).
// Most groups have a step or two: those live in execute()'s frame, so a small call neither
// touches the thread's buffers (a thread_local of a shared library: __tls_get_addr) nor
// reserves a vector.
class GroupRuns {
 public:
  static constexpr size_t kInline = 4;

  GroupRuns() = default;
  GroupRuns(const GroupRuns&) = delete;
  GroupRuns& operator=(const GroupRuns&) = delete;
  ~GroupRuns() { clear(); }

  // Drops the previous group's runs and makes room for `n`.
  void reset(size_t n) {
    clear();
    if (n > kInline) {
      spill_ = &threadBuffers().runs;
      spill_->clear();
      spill_->reserve(n);  // no reallocation: a StepRun's address is stable
    }
  }
  template <typename... Args>
  StepRun& add(Args&&... args) {
    if (spill_ != nullptr) return spill_->emplace_back(std::forward<Args>(args)...);
    return *::new (slot(n_++)) StepRun(std::forward<Args>(args)...);
  }
  std::span<StepRun> all() {
    return spill_ != nullptr ? std::span(*spill_) : std::span(slot(0), n_);
  }

 private:
  StepRun* slot(size_t i) { return std::launder(reinterpret_cast<StepRun*>(storage_)) + i; }
  void clear() {
    for (size_t i = 0; i < n_; ++i) slot(i)->~StepRun();
    n_ = 0;
    if (spill_ != nullptr) spill_->clear();
    spill_ = nullptr;
  }

  alignas(StepRun) std::byte storage_[kInline * sizeof(StepRun)];  // no fill: n_ are built
  size_t n_ = 0;
  std::vector<StepRun>* spill_ = nullptr;
};

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
  // Groups, their peers, the steps' message numbers, byte counts and receive handling are the
  // schedule's, derived once (a cached plan runs thousands of times). The connections are
  // looked up per call (an index into ctx.conns): nothing of the communicator is kept in the
  // schedule, so nothing of it can go stale.
  const Layout& layout = schedule.layout();
  // Connections that may still read a source buffer: this thread's buffer, fetched only when
  // a send is still unfinished after its group (most small calls have none).
  std::vector<Connection*>* unfinished = nullptr;
  GroupRuns runs;
  const auto& steps = schedule.steps();
  for (const Layout::Group& group : layout.groups) {
    runs.reset(group.last - group.first + 1);
    for (uint32_t i = group.first; i <= group.last; ++i) {
      StepRun& run = runs.add(schedule, steps[i], layout.runs[i], scratch);
      TRN_TRY(run.begin(ctx, layout.messages[i]));
    }
    const std::span<StepRun> all = runs.all();
    const auto allDone = [&] {
      return std::all_of(all.begin(), all.end(), [](auto& r) { return r.done(); });
    };
    // A group of local steps (the copy of an out-of-place call) is done once begun: no poll,
    // no wait (a third of a 2-rank all-reduce's groups). Earlier sends still unfinished are
    // driven by the next group's polls, or by the wait at the end.
    if (allDone()) continue;
    TRN_TRY(progressUntil(
        ctx, layout.peersOf(group),
        [&](bool& progressed) {
          for (auto& run : all) TRN_TRY(run.poll(progressed));
          // Keep driving earlier sends too: with manual progress (libfabric) their bytes leave
          // this rank only while we poll the connection, and the current steps may use other
          // connections (shm) whose peers wait, through the ring, for exactly those bytes.
          if (unfinished == nullptr) return Status::ok();
          for (auto it = unfinished->begin(); it != unfinished->end();) {
            Result<bool> d = (*it)->sendDone();
            if (!d) return d.status();
            it = *d ? unfinished->erase(it) : it + 1;
          }
          return Status::ok();
        },
        allDone));
    // A connection whose sends are already released (an shm LL message is, once written) is
    // not watched any further: most small calls never fill `unfinished`.
    for (int peer : layout.sendersOf(group)) {
      Connection* c = connection(ctx, peer);  // begin() failed without one
      if (unfinished != nullptr &&
          std::find(unfinished->begin(), unfinished->end(), c) != unfinished->end()) {
        continue;
      }
      Result<bool> d = c->sendDone();
      if (!d) return d.status();
      if (*d) continue;
      if (unfinished == nullptr) {
        unfinished = &threadBuffers().unfinished;
        unfinished->clear();
      }
      unfinished->push_back(c);
    }
  }
  if (unfinished == nullptr || unfinished->empty()) return Status::ok();
  // The caller may reuse its buffers once we return: wait until no peer still reads them.
  auto& peers = threadBuffers().peers;
  peers.clear();
  for (Connection* c : *unfinished) peers.push_back(c->peer());
  bool allDone = false;
  return progressUntil(
      ctx, peers,
      [&](bool&) {
        allDone = true;
        for (Connection* c : *unfinished) {
          Result<bool> d = c->sendDone();
          if (!d) return d.status();
          allDone = allDone && *d;
        }
        return Status::ok();
      },
      [&] { return allDone; });
}

}  // namespace trnccl::schedule
