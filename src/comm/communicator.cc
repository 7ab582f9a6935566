#include "comm/communicator.h"

#include <algorithm>

#include "comm/peer_info.h"
#include "common/log.h"
#include "device/device_api.h"
#include "schedule/executor.h"
#include "trnccl/trnccl.h"

namespace trnccl::comm {

Result<std::unique_ptr<Communicator>> Communicator::init(const bootstrap::UniqueId& id, int nranks,
                                                         int rank, int device,
                                                         const Config& config) {
  std::unique_ptr<Communicator> c(new Communicator());
  c->rank_ = rank;
  c->nranks_ = nranks;
  c->device_ = device;
  c->config_ = config;
  c->commHash_ = id.magic;
  c->p2pSent_.assign(nranks, 0);
  c->p2pReceived_.assign(nranks, 0);
  log::setThreadRank(rank);
  auto view = plan::describeTopology(config.topology, nranks);
  if (!view) return view.status();
  c->topology_ = std::move(*view);
  TRN_TRY(c->connect(id));
  c->groupInstancesByHost();
  c->modelTransports();
  if (rank == 0) {
    TRN_INFO(kInit, "trnccl {}.{}.{}: {} ranks, topology {}, transports {}{}", TRNCCL_MAJOR,
             TRNCCL_MINOR, TRNCCL_PATCH, nranks, c->topology_.summary, config.transports,
             config.deterministic ? ", deterministic reductions (rank-order fold)" : "");
  }
  TRN_INFO(kInit, "comm {:#x} rank {} of {} on device {} ready", c->commHash_, rank, nranks,
           device);
  return c;
}

Status Communicator::connect(const bootstrap::UniqueId& id) {
  Deadline deadline = Deadline::after(config_.initTimeout);
  if (id.fromEnv && rank_ == 0 && id.scalable.size() < 2) TRN_TRY(bootstrap::ensureRoot(id));
  openRecoveryPort();
  RankCard self{makeSelfInfo(rank_, device_),
                recovery_ ? recovery_->address() : bootstrap::RecoveryAddress{}};
  auto boot = id.scalable.size() > 1
                  ? bootstrap::Bootstrap::connectScalable(id.scalable, rank_, nranks_,
                                                          self.encode(), deadline)
                  : bootstrap::Bootstrap::connect(id, rank_, nranks_, self.encode(), deadline);
  if (!boot) return boot.status();
  bootstrap_ = std::move(*boot);
  bootstrap_->setTimeout(config_.initTimeout);
  peers_.resize(nranks_);
  recoveryAddresses_.resize(nranks_);
  for (int r = 0; r < nranks_; ++r) {
    auto card = RankCard::decode(bootstrap_->infos()[r], r);
    if (!card) return card.status();
    peers_[r] = card->info;
    recoveryAddresses_[r] = card->recovery;
  }
  transport::SetupContext ctx;
  ctx.rank = rank_;
  ctx.nranks = nranks_;
  ctx.commHash = commHash_;
  ctx.peers = peers_;
  ctx.oob = bootstrap_.get();
  ctx.bell = &bell_;
  ctx.locate = [](const void* p) { return device::locate(p); };
  ctx.registered = &registered_;
  ctx.deadline = deadline;
  auto set = TransportSet::connect(ctx, config_.transports);
  if (!set) return set.status();
  transports_ = std::move(*set);
  conns_ = transports_->connections();
  if (size_t buf = transports_->minBufferBytes(); buf > 0) sliceBytes_ = buf / 4;
  bootstrap_->setTimeout(config_.opTimeout);
  return Status::ok();
}

// The instances are the hosts the peers actually run on (or the emulated instances of
// TRNCCL_EMU_RANKS_PER_NODE, which the host hash already encodes), not what the description
// would assume: that is what the hierarchical algorithm must follow.
void Communicator::groupInstancesByHost() {
  std::vector<uint64_t> hosts;
  algorithms::Grid grid;
  for (int r = 0; r < nranks_; ++r) {
    auto it = std::find(hosts.begin(), hosts.end(), peers_[r].hostHash);
    if (it == hosts.end()) {
      hosts.push_back(peers_[r].hostHash);
      grid.rows.emplace_back();
      it = hosts.end() - 1;
    }
    grid.rows[it - hosts.begin()].push_back(r);
  }
  auto shape = std::make_shared<algorithms::Shape>(*topology_.shape);
  shape->instances = hosts.size() > 1 ? grid : algorithms::Grid{};
  if (hosts.size() > 1) {
    // The description's instance sizes say nothing about where the ranks really run.
    topology_.summary += fmt::format("; ranks on {} hosts: instance grid {}x{} from the hosts",
                                     hosts.size(), grid.numRows(), grid.numCols());
  }
  topology_.links.multiInstance = hosts.size() > 1;
  topology_.shape = shape;
}

// The tuner prices every link with the transport that carries it (algorithms/cost.h
// TransportCost): within an instance the transport of a peer on this host, across instances
// that of a peer on another (the first one found; TransportSet picks per pair by one order).
void Communicator::modelTransports() {
  algorithms::TransportTerms& terms = topology_.links.transports;
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_ || conns_[r] == nullptr) continue;
    const bool local = peers_[r].hostHash == peers_[rank_].hostHash;
    const algorithms::TransportCost*& slot = local ? terms.intra : terms.inter;
    if (slot == nullptr) slot = algorithms::transportCost(conns_[r]->transportName());
  }
}

Communicator::~Communicator() {
  // Transports go first: their segments and sockets must not outlive the job's bootstrap.
  transports_.reset();
  bootstrap_.reset();
  recovery_.reset();
}

// No lock per task (issue 14: the caller's beginTask and the worker's endTask took one mutex,
// whose cache line then moved between their cores on every call): each side counts on a line
// of its own, and endTask takes the mutex only when waitIdle() announced a waiter.
uint64_t Communicator::beginTask(bool collective) {
  begun_.fetch_add(1, std::memory_order_relaxed);
  return collective ? nextSeq_.fetch_add(1, std::memory_order_relaxed)
                    : nextSeq_.load(std::memory_order_relaxed);
}

void Communicator::endTask() {
  ended_.fetch_add(1, std::memory_order_seq_cst);
  // Pairs with waitIdle's announcement: it sees this task ended, or this load sees it waiting.
  if (idleWaiters_.load(std::memory_order_seq_cst) == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  idle_.notify_all();
}

// Calls that never wait (shm, peers in step) never reach the executor's idle health check, so
// run() also looks at the root between calls, at most this often: a communicator the root failed
// (a rank's bootstrap connection was lost) fails on every rank within about this period. A root
// that merely exited (rank 0 finalized and left) fails nothing here: what was sent is delivered.
constexpr auto kRootCheckEvery = std::chrono::milliseconds(50);

void Communicator::checkRootBetweenCalls(Clock::time_point at) {
  using std::chrono::nanoseconds;
  const int64_t now = std::chrono::duration_cast<nanoseconds>(at.time_since_epoch()).count();
  int64_t due = nextRootCheckNs_.load(std::memory_order_relaxed);
  if (now < due || !bootstrap_ ||
      !nextRootCheckNs_.compare_exchange_strong(due, now + nanoseconds(kRootCheckEvery).count())) {
    return;
  }
  if (Status s = bootstrap_->checkRoot(false); !s) setAsyncError(s);
}

Status Communicator::run(const schedule::Schedule& s, uint64_t seq,
                         const schedule::CallName& what) {
  log::setThreadRank(rank_);
  const Clock::time_point now = Clock::now();  // one clock read for both uses
  checkRootBetweenCalls(now);
  // The flag first: a healthy communicator's call builds no Status here.
  if (failed_.load(std::memory_order_acquire)) {
    Status err = asyncError();
    return Status(err.code(), fmt::format("{} not run: communicator already failed: {}", what.str(),
                                          err.message()));
  }
  schedule::ExecContext ctx;
  ctx.rank = rank_;
  ctx.conns = conns_;
  ctx.bell = &bell_;
  ctx.deadline = Deadline(now + config_.opTimeout);
  ctx.abortFlag = &aborted_;
  ctx.seq = seq;
  ctx.what = what;
  ctx.p2pSent = &p2pSent_;
  ctx.p2pReceived = &p2pReceived_;
  ctx.health = [](void* self) { return static_cast<Communicator*>(self)->bootstrap_->checkRoot(); };
  ctx.healthArg = this;
  ctx.scratch = &scratch_;
  Status st = schedule::execute(s, ctx);
  if (!st) setAsyncError(st);
  return st;
}

Status Communicator::waitIdle(Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  idleWaiters_.fetch_add(1, std::memory_order_seq_cst);
  // Tasks end on other threads: ended_ first. Each end counted had its begin happen before it,
  // so the begun_ read after covers them and the difference never wraps (read the other way
  // round, a task begun and ended between the two reads made it wrap: a spurious busy).
  auto inFlight = [this] {
    const uint64_t ended = ended_.load(std::memory_order_seq_cst);
    return begun_.load(std::memory_order_seq_cst) - ended;
  };
  const bool idle = idle_.wait_until(lock, deadline.at(), [&] { return inFlight() == 0; });
  idleWaiters_.fetch_sub(1, std::memory_order_seq_cst);
  if (!idle) {
    return Status(Code::kTimeout,
                  fmt::format("rank {}: {} operation(s) still running", rank_, inFlight()));
  }
  return Status::ok();
}

void Communicator::abort() {
  aborted_.store(true);
  bell_.ring();
  if (bootstrap_) bootstrap_->abort();
  setAsyncError(Status(Code::kRemoteError, "communicator aborted"));
}

Status Communicator::asyncError() const {
  // Read by every call: a healthy communicator's costs no lock.
  if (!failed_.load(std::memory_order_acquire)) return Status::ok();
  std::lock_guard<std::mutex> lock(mu_);
  return asyncError_;
}

void Communicator::setAsyncError(const Status& s) {
  if (s.isOk()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (asyncError_.isOk()) {
    asyncError_ = s;
    failed_.store(true, std::memory_order_release);
  }
}

}  // namespace trnccl::comm
