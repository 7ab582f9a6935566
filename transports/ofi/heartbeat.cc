#include "transports/ofi/heartbeat.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "common/env.h"
#include "common/log.h"
#include "transports/ofi/testing.h"
#include "transports/ofi/wire.h"

namespace trnccl::transport::ofi {
namespace {

constexpr size_t kCqBatch = 16;
constexpr size_t kCqEntries = 1024;
constexpr size_t kBeatBytes = sizeof(kHeartbeatMagic);
constexpr auto kCloseWait = std::chrono::milliseconds(200);      // goodbyes, then cancels
constexpr auto kGreetBound = std::chrono::milliseconds(120000);  // when setup has no deadline

// A heartbeat refused this long (rxm reconnecting, and refused) means a broken connection (see
// the header): the pacing of the ticks (three quarters of an interval), so the next tick
// already judges it.
std::chrono::milliseconds stuckAfter(std::chrono::milliseconds interval) {
  return interval * 3 / 4;
}

}  // namespace

Result<std::unique_ptr<Heartbeats>> Heartbeats::open(const fi_info& info, int rank) {
  std::unique_ptr<Heartbeats> beats(new Heartbeats(rank));
  TRN_TRY(beats->openObjects(info));
  return beats;
}

Status Heartbeats::openObjects(const fi_info& info) {
  constexpr const char* kWhat = "ofi: heartbeat endpoint";
  info_.reset(fi_dupinfo(&info));
  if (!info_) return systemError("{}: fi_dupinfo failed", kWhat);
  TRN_TRY(openDomain(*info_, fabric_, domain_, kWhat));
  mrLocal_ = (info_->domain_attr->mr_mode & FI_MR_LOCAL) != 0 ||
             env::getInt("TRNCCL_OFI_MR_LOCAL", 0) != 0;
  fi_cq_attr cqAttr{};
  cqAttr.format = FI_CQ_FORMAT_TAGGED;
  cqAttr.size = kCqEntries;
  cqAttr.wait_obj = FI_WAIT_NONE;  // read at the ticks and the executor's checks only
  fid_cq* cq = nullptr;
  int rc = fi_cq_open(domain_.get(), &cqAttr, &cq, nullptr);
  if (rc != 0) return systemError("{}: {}", kWhat, fiError("fi_cq_open", rc));
  cq_.reset(cq);
  return openEndpoint(*info_, domain_.get(), cq_.get(), av_, ep_, kWhat);
}

Heartbeats::~Heartbeats() {
  std::lock_guard lock(mutex_);
  if (!ep_) return;
  logDelays();
  sayGoodbye();
  cancelReceives();
}

// How soon the provider took this rank's heartbeats, which the refusal rule relies on
// (docs/RELIABILITY.md, F8): the most completion-queue reads a send needed (1: at the first
// read after fi_tsend), and the longest a check saw one pending or refused.
void Heartbeats::logDelays() const {
  uint64_t reads = 0;
  Clock::duration pending{}, refused{};
  for (const auto& p : peers_) {
    reads = std::max(reads, p->mostReads);
    pending = std::max(pending, p->longestPending);
    refused = std::max(refused, p->longestRefusal);
  }
  using Ms = std::chrono::duration<double, std::milli>;
  TRN_INFO(kNet,
           "ofi: rank {}: heartbeat sends completed within {} queue read(s); longest seen "
           "pending {:.1f} ms, refused {:.1f} ms",
           rank_, reads, Ms(pending).count(), Ms(refused).count());
}

Result<std::vector<std::byte>> Heartbeats::name() const {
  return endpointName(ep_.get(), "ofi: heartbeat endpoint");
}

Status Heartbeats::add(const PeerConfig& config) {
  std::lock_guard lock(mutex_);
  auto peer = std::make_unique<Peer>();
  peer->config = config;
  peer->config.name = {};  // the caller's bytes: used only here
  int rc = fi_av_insert(av_.get(), config.name.data(), 1, &peer->address, 0, nullptr);
  if (rc != 1) {
    return Status(Code::kSystemError,
                  fmt::format("ofi: inserting rank {}'s heartbeat address: {}", config.peer,
                              rc < 0 ? fiError("fi_av_insert", rc) : "fi_av_insert took none"),
                  config.peer);
  }
  Result<RegisteredBuffer> memory =
      RegisteredBuffer::allocate(mrLocal_ ? domain_.get() : nullptr, 3 * kBeatBytes);
  if (!memory) return memory.status();
  peer->memory = std::move(*memory);
  for (Beat* beat : {&peer->beatOut, &peer->beatIn, &peer->beatBye}) beat->peer = peer.get();
  peer->beatOut.send = peer->beatBye.send = true;
  peers_.push_back(std::move(peer));
  if (config.interval.count() > 0) TRN_TRY(postReceive(*peers_.back()));
  return Status::ok();
}

std::chrono::milliseconds Heartbeats::fastest() const {
  std::chrono::milliseconds best{0};
  for (const auto& p : peers_) {
    auto interval = p->config.interval;
    if (interval.count() > 0 && (best.count() == 0 || interval < best)) best = interval;
  }
  return best;
}

// ---- posting ----

Status Heartbeats::post(Beat& beat, void* buffer, uint64_t tag, uint64_t ignore) {
  const Peer& p = *beat.peer;
  void* desc = p.memory.desc();
  ssize_t rc = beat.send
                   ? fi_tsend(ep_.get(), buffer, kBeatBytes, desc, p.address, tag, &beat.context)
                   : fi_trecv(ep_.get(), buffer, kBeatBytes, desc, FI_ADDR_UNSPEC, tag, ignore,
                              &beat.context);
  if (rc == -FI_EAGAIN) return Status::ok();  // not now: the next tick tries again
  if (rc != 0) {
    return Status(Code::kRemoteError,
                  fmt::format("ofi: posting a heartbeat {} rank {}: {}", beat.send ? "to" : "from",
                              p.config.peer, fiError(beat.send ? "fi_tsend" : "fi_trecv", rc)),
                  p.config.peer);
  }
  beat.posted = true;
  ++posted_;
  return Status::ok();
}

Status Heartbeats::send(Peer& peer, Beat& beat, std::byte* buffer, uint64_t magic) {
  std::memcpy(buffer, &magic, kBeatBytes);
  if (&beat != &peer.beatOut) return post(beat, buffer, wireTag(WireKind::kHeartbeat, rank_, 0), 0);
  peer.sentAt = Clock::now();
  peer.postedAtRead = reads_;
  TRN_TRY(post(beat, buffer, wireTag(WireKind::kHeartbeat, rank_, peer.seq++), 0));
  if (beat.posted) {
    peer.refusedSince = {};
  } else if (peer.refusedSince == Clock::time_point{}) {
    peer.refusedSince = peer.sentAt;  // a provider that refuses instead of queueing
  }
  return Status::ok();
}

Status Heartbeats::postReceive(Peer& peer) {
  return post(peer.beatIn, peer.memory.data() + kBeatBytes,
              wireTag(WireKind::kHeartbeat, peer.config.peer, 0), kSeqMask);
}

// ---- completions ----

void Heartbeats::progress() {
  ++reads_;
  fi_cq_tagged_entry entries[kCqBatch];
  while (true) {
    ssize_t n = fi_cq_read(cq_.get(), entries, kCqBatch);
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry entry{};
      if (fi_cq_readerr(cq_.get(), &entry, 0) != 1) return;
      failed(entry);
      continue;
    }
    if (n <= 0) return;  // -FI_EAGAIN, or a queue error the next read reports again
    for (ssize_t i = 0; i < n; ++i) arrived(*static_cast<Beat*>(entries[i].op_context));
    if (static_cast<size_t>(n) < kCqBatch) return;
  }
}

void Heartbeats::arrived(Beat& beat) {
  beat.posted = false;
  --posted_;
  Peer& p = *beat.peer;
  if (beat.send) {
    if (&beat == &p.beatOut) {
      if (p.taken) p.mostReads = std::max(p.mostReads, reads_ - p.postedAtRead);  // not the first
      p.taken = true;
    }
    return;
  }
  uint64_t magic = 0;
  std::memcpy(&magic, p.memory.data() + kBeatBytes, kBeatBytes);
  if (magic == kGoodbyeMagic) {
    p.closed = true;  // nothing more will come; the receive is not reposted
    return;
  }
  p.config.heard->touch();
  p.greeted = true;
  if (Status s = postReceive(p); !s && p.failure) p.failure = std::move(s);
}

void Heartbeats::failed(const fi_cq_err_entry& entry) {
  auto* beat = static_cast<Beat*>(entry.op_context);
  if (beat == nullptr) return;
  beat->posted = false;
  --posted_;
  Peer& p = *beat->peer;
  if (entry.err == FI_ECANCELED || beat == &p.beatBye) return;
  char detail[256] = "";
  const char* provider =
      fi_cq_strerror(cq_.get(), entry.prov_errno, entry.err_data, detail, sizeof(detail));
  Status status(
      Code::kRemoteError,
      fmt::format("ofi: heartbeat {} rank {} ({}) failed on rank {}: {} ({}); "
                  "provider: {}",
                  beat->send ? "to" : "from", p.config.peer, p.config.where, rank_,
                  fi_strerror(entry.err), entry.err, provider != nullptr ? provider : detail),
      p.config.peer);
  if (p.failure) p.failure = std::move(status);
  if (!beat->send && !p.closed) (void)postReceive(p);
}

// ---- checking ----

Status Heartbeats::evaluate(Peer& p, Clock::time_point now, bool awaited) {
  const PeerConfig& c = p.config;
  if (p.closed) {
    return awaited ? checkLiveness(*c.heard, c.timeout, "ofi", c.peer, c.where) : Status::ok();
  }
  if (!p.failure) return p.failure;
  if (p.taken && p.beatOut.posted) p.longestPending = std::max(p.longestPending, now - p.sentAt);
  if (p.taken && p.refusedSince != Clock::time_point{}) {
    p.longestRefusal = std::max(p.longestRefusal, now - p.refusedSince);
  }
  // Only a refusal: a posted heartbeat may legitimately wait under loss (F10).
  const Clock::time_point since = p.refusedSince;
  if (c.timeout.count() > 0 && p.taken && since != Clock::time_point{} &&
      now - since > stuckAfter(c.interval)) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - since).count();
    p.failure = Status(Code::kRemoteError,
                       fmt::format("ofi: heartbeat to rank {} ({}) refused for {} ms on rank "
                                   "{}: the connection was reset or closed, and the peer's side "
                                   "refuses a new one",
                                   c.peer, c.where, ms, rank_),
                       c.peer);
    return p.failure;
  }
  return checkLiveness(*c.heard, c.timeout, "ofi", c.peer, c.where);
}

Heartbeats::Peer* Heartbeats::find(int peer) {
  for (auto& p : peers_) {
    if (p->config.peer == peer) return p.get();
  }
  return nullptr;
}

// Reposts a refused receive. Sends a heartbeat when none is in flight and either the last was
// refused (-FI_EAGAIN: retried at every call, so a refusal that lasts is the connection's, not a
// moment's) or, with `due`, one is due (three quarters of an interval: a tick landing a hair early
// must not push it to the next one).
void Heartbeats::beat(Peer& p, Clock::time_point now, bool due) {
  if (p.closed || !p.failure) return;
  if (!p.beatIn.posted) (void)postReceive(p);  // one the provider refused (-FI_EAGAIN)
  if (p.beatOut.posted) return;
  const bool refused = p.refusedSince != Clock::time_point{};
  if (!refused && !(due && now - p.sentAt >= p.config.interval * 3 / 4)) return;
  if (Status s = send(p, p.beatOut, p.memory.data(), kHeartbeatMagic); !s) p.failure = s;
}

bool Heartbeats::tick(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  progress();
  bool failedNow = false;
  for (auto& owned : peers_) {
    Peer& p = *owned;
    if (p.config.interval.count() <= 0) continue;
    beat(p, now, true);
    if (Status s = evaluate(p, Clock::now(), false); !s) {
      failedNow |= !p.reported;
      p.reported = true;
    }
  }
  return failedNow;
}

Status Heartbeats::check(int peer, bool awaited) {
  std::lock_guard lock(mutex_);
  Peer* p = find(peer);
  if (p == nullptr || p->config.interval.count() <= 0) return Status::ok();
  progress();
  const auto now = Clock::now();
  beat(*p, now, false);
  return evaluate(*p, now, awaited);
}

// ---- setup and shutdown ----

template <typename Done>
void Heartbeats::progressUntil(Done done, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  auto nap = std::chrono::microseconds(20);
  while (true) {
    progress();
    if (done() || Clock::now() >= until) return;
    std::this_thread::sleep_for(nap);  // spin briefly, then block: the machine is shared
    nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::milliseconds(2));
  }
}

Status Heartbeats::greet(Deadline deadline) {
  if (deadline.at() == Clock::time_point::max()) deadline = Deadline::after(kGreetBound);
  std::lock_guard lock(mutex_);
  auto nap = std::chrono::microseconds(20);
  while (true) {
    progress();
    std::string waiting;  // the peers not greeted yet
    for (auto& p : peers_) {
      if (p->config.interval.count() <= 0) continue;
      if (!p->failure) return p->failure;
      // Again until taken: rxm says -FI_EAGAIN while it connects.
      if (!p->taken && !p->beatOut.posted) {
        TRN_TRY(send(*p, p->beatOut, p->memory.data(), kHeartbeatMagic));
      }
      if (!p->greeted || !p->taken) waiting += fmt::format(" {}", p->config.peer);
    }
    if (waiting.empty()) break;
    if (deadline.expired()) {
      return Status(Code::kTimeout,
                    fmt::format("ofi: rank {} exchanged no heartbeat with rank(s){} before the "
                                "init deadline",
                                rank_, waiting));
    }
    std::this_thread::sleep_for(nap);  // spin briefly, then block: the machine is shared
    nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::milliseconds(2));
  }
  for (auto& p : peers_) p->config.heard->touch();  // the silence clock starts now
  return Status::ok();
}

void Heartbeats::sayGoodbye() {
  progress();  // a peer's goodbye already here: it is gone, none to send
  for (auto& p : peers_) {
    if (p->config.interval.count() > 0 && p->failure && !p->closed && p->taken) {
      (void)send(*p, p->beatBye, p->memory.data() + 2 * kBeatBytes, kGoodbyeMagic);
    }
  }
  progressUntil(
      [this] {
        return std::none_of(peers_.begin(), peers_.end(),
                            [](const auto& p) { return p->beatBye.posted; });
      },
      kCloseWait);
}

void Heartbeats::cancelReceives() {
  const size_t held = posted_;
  for (auto& p : peers_) {
    if (p->beatIn.posted) (void)fi_cancel(&ep_->fid, &p->beatIn.context);
  }
  progressUntil(
      [this] {
        return std::none_of(peers_.begin(), peers_.end(),
                            [](const auto& p) { return p->beatIn.posted; });
      },
      kCloseWait);
  testing::counters().add(testing::Event::kReleasedAtClose, static_cast<int64_t>(held - posted_));
  testing::counters().add(testing::Event::kHeldAtClose, static_cast<int64_t>(posted_));
  if (posted_ > 0) {
    TRN_INFO(kNet, "ofi: rank {} closes its heartbeat endpoint with {} operation(s) not done",
             rank_, posted_);
  }
}

}  // namespace trnccl::transport::ofi
