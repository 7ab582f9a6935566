#include "transports/ofi/endpoint.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/env.h"
#include "common/log.h"
#include "common/thread.h"
#include "transports/ofi/channel.h"
#include "transports/ofi/heartbeat.h"
#include "transports/ofi/mr_cache.h"
#include "transports/ofi/provider.h"
#include "transports/ofi/sockets.h"
#include "transports/ofi/testing.h"
#include "transports/ofi/waker.h"

namespace trnccl::transport::ofi {
namespace {

constexpr size_t kCqBatch = 16;
constexpr int kCqRounds = 8;  // batches per progress() call, so one call stays short
constexpr size_t kMinCqEntries = 1024;
constexpr int64_t kDefaultLingerMs = 2000;
constexpr auto kCancelMs = std::chrono::milliseconds(500);

// The providers whose fi_trywait leaves the completion queue's signal set: libfabric's native
// tcp RDM protocol (xnet: `net` in 1.17, `tcp` from 1.18 on), whose fabric trywait returns
// success and does nothing. Their queue's descriptor stays readable after the first
// completion, so a waker watching it rang at once every time: the executor and the waker took
// turns at full speed instead of sleeping (27,769 sleeps and rings in OfiWaitTest's 600 ms
// wait). Their queue goes into a wait set of ours instead, whose fi_wait clears the signal.
bool needsOwnWaitSet(const fi_info& info) { return nativeTcp(info); }

}  // namespace

const char* opName(OpKind kind) {
  switch (kind) {
    case OpKind::kSendHeader:
      return "header send to";
    case OpKind::kSendData:
      return "data send to";
    case OpKind::kRecvHeader:
      return "header receive from";
    case OpKind::kRecvData:
      return "data receive from";
  }
  return "operation with";
}

Endpoint::Endpoint(InfoPtr info, int rank, Doorbell* bell, MemoryLocator locate)
    : info_(std::move(info)), rank_(rank), bell_(bell), locate_(std::move(locate)) {}

Result<std::shared_ptr<Endpoint>> Endpoint::open(InfoPtr info, int rank, Doorbell* bell,
                                                 MemoryLocator locate) {
  std::shared_ptr<Endpoint> endpoint(new Endpoint(std::move(info), rank, bell, std::move(locate)));
  TRN_TRY(endpoint->openObjects());
  return endpoint;
}

Status Endpoint::openObjects() {
  TRN_TRY(openDomain(*info_, fabric_, domain_, "ofi"));
  // Forcing registration on a provider that does not need it exercises the FI_MR_LOCAL paths
  // (efa's) with real registrations on whatever provider a test machine has.
  mrLocal_ = (info_->domain_attr->mr_mode & FI_MR_LOCAL) != 0 ||
             env::getInt("TRNCCL_OFI_MR_LOCAL", 0) != 0;
  if (mrLocal_) mrCache_ = std::make_unique<MrCache>(domain_.get(), locate_);
  if (env::getInt("TRNCCL_OFI_INJECT", 1) != 0) injectBytes_ = info_->tx_attr->inject_size;

  // A descriptor to wait on if the provider offers one; else a plain polled queue.
  fi_cq_attr cqAttr{};
  cqAttr.format = FI_CQ_FORMAT_TAGGED;
  cqAttr.size = std::max(kMinCqEntries, info_->rx_attr->size + info_->tx_attr->size);
  cqAttr.wait_obj = env::getInt("TRNCCL_OFI_WAKER", 1) != 0 ? FI_WAIT_FD : FI_WAIT_NONE;
  int rc = 0;
  if (cqAttr.wait_obj == FI_WAIT_FD && needsOwnWaitSet(*info_)) {
    fi_wait_attr waitAttr{};
    waitAttr.wait_obj = FI_WAIT_FD;
    fid_wait* set = nullptr;
    rc = fi_wait_open(fabric_.get(), &waitAttr, &set);
    if (rc == 0) {
      waitSet_.reset(set);
      cqAttr.wait_obj = FI_WAIT_SET;
      cqAttr.wait_set = set;
    } else {
      TRN_INFO(kNet, "ofi: no wait set ({}); polling only", fiError("fi_wait_open", rc));
      cqAttr.wait_obj = FI_WAIT_NONE;
    }
  }
  fid_cq* cq = nullptr;
  rc = fi_cq_open(domain_.get(), &cqAttr, &cq, nullptr);
  if (rc != 0 && cqAttr.wait_obj != FI_WAIT_NONE) {
    TRN_INFO(kNet, "ofi: no file-descriptor wait object ({}); polling only",
             fiError("fi_cq_open", rc));
    cqAttr.wait_obj = FI_WAIT_NONE;
    cqAttr.wait_set = nullptr;
    waitSet_.reset();
    rc = fi_cq_open(domain_.get(), &cqAttr, &cq, nullptr);
  }
  if (rc != 0) return systemError("ofi: {}", fiError("fi_cq_open", rc));
  cq_.reset(cq);
  TRN_TRY(openEndpoint(*info_, domain_.get(), cq_.get(), av_, ep_, "ofi"));
  Result<std::vector<std::byte>> self = name();
  if (!self) return self.status();
  sockets_ = std::make_unique<ProviderSockets>(info_->addr_format, *self);
  if (!sockets_->active()) sockets_.reset();

  if (cqAttr.wait_obj == FI_WAIT_FD || waitSet_) {
    int fd = -1;
    rc = fi_control(waitSet_ ? &waitSet_->fid : &cq_->fid, FI_GETWAIT, &fd);
    if (rc == 0 && fd >= 0) {
      waker_ = std::make_unique<Waker>(fd, bell_, &cqReads_);
      if (!waker_->running()) waker_.reset();
    } else {
      TRN_INFO(kNet, "ofi: no wait descriptor ({}); polling only", fiError("fi_control", rc));
    }
  }
  return Status::ok();
}

Endpoint::~Endpoint() {
  stopLiveness();  // it takes the lock and calls libfabric
  waker_.reset();  // before anything it watches closes
  std::lock_guard lock(mutex_);
  if (!ep_) return;
  drain();
  heartbeats_.reset();  // goodbyes once the last data left
  cancelAll();
}

void Endpoint::released(Op& op) {
  if (!op.posted) return;
  op.posted = false;
  --posted_;
}

void Endpoint::cancelAll() {
  queued_.clear();  // never handed to the provider
  for (auto& channel : channels_) {
    channel->forEachOp([this](Op& op) {
      if (op.posted) (void)fi_cancel(&ep_->fid, &op.context);  // -FI_ENOENT: already done
    });
  }
  // The completions only: nothing is reposted or handed to a channel any more.
  const size_t held = posted_;
  const auto until = std::chrono::steady_clock::now() + kCancelMs;
  fi_cq_tagged_entry entries[kCqBatch];
  while (posted_ > 0 && std::chrono::steady_clock::now() < until) {
    ssize_t n = fi_cq_read(cq_.get(), entries, kCqBatch);
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry entry{};
      if (fi_cq_readerr(cq_.get(), &entry, 0) == 1 && entry.op_context != nullptr) {
        released(*static_cast<Op*>(entry.op_context));
      }
    } else if (n > 0) {
      for (ssize_t i = 0; i < n; ++i) released(*static_cast<Op*>(entries[i].op_context));
    } else if (n == -FI_EAGAIN) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    } else {
      break;  // the queue itself failed: nothing more will come
    }
  }
  testing::counters().add(testing::Event::kReleasedAtClose, static_cast<int64_t>(held - posted_));
  testing::counters().add(testing::Event::kHeldAtClose, static_cast<int64_t>(posted_));
  if (posted_ > 0) {
    TRN_INFO(kNet, "ofi: rank {} closes its endpoint with {} operation(s) not cancelled", rank_,
             posted_);
  }
}

void Endpoint::drain() {
  auto linger = std::chrono::milliseconds(env::getInt("TRNCCL_OFI_LINGER_MS", kDefaultLingerMs));
  auto until = std::chrono::steady_clock::now() + linger;
  auto busy = [&] {
    return std::any_of(channels_.begin(), channels_.end(), [this](const auto& c) {
      return c->sending() && linkStatus(*c, false).isOk();
    });
  };
  while (busy() && error_.isOk()) {
    if (std::chrono::steady_clock::now() >= until) {
      TRN_WARN(kNet, "ofi: rank {} closes with sends still in flight after {} ms", rank_,
               linger.count());
      return;
    }
    (void)progress();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Result<std::vector<std::byte>> Endpoint::name() const { return endpointName(ep_.get(), "ofi"); }

Result<fi_addr_t> Endpoint::insert(std::span<const std::byte> name, int peer) {
  fi_addr_t address = FI_ADDR_UNSPEC;
  int rc = fi_av_insert(av_.get(), name.data(), 1, &address, 0, nullptr);
  if (rc != 1) {
    return Status(Code::kSystemError,
                  fmt::format("ofi: inserting rank {}'s address: {}", peer,
                              rc < 0 ? fiError("fi_av_insert", rc) : "fi_av_insert took none"),
                  peer);
  }
  if (sockets_) sockets_->addPeer(name);
  return address;
}

Channel& Endpoint::adopt(std::unique_ptr<Channel> channel) {
  channels_.push_back(std::move(channel));
  return *channels_.back();
}

void Endpoint::useHeartbeats(std::unique_ptr<Heartbeats> heartbeats) {
  heartbeats_ = std::move(heartbeats);
}

Status Endpoint::linkStatus(Channel& channel, bool awaited) {
  TRN_TRY(channel.error());
  if (!heartbeats_) return Status::ok();
  Status link = heartbeats_->check(channel.peer(), awaited);
  if (!link) channel.fail(link);
  return link;
}

Result<bool> Endpoint::tryPost(Op& op) {
  ssize_t rc = 0;
  if (isSend(op.kind) && op.parts > 0) {
    rc = fi_tsendv(ep_.get(), op.iov.data(), op.descs.data(), op.parts, op.address, op.tag,
                   &op.context);
  } else if (isSend(op.kind)) {
    rc = fi_tsend(ep_.get(), op.buffer, op.bytes, op.desc, op.address, op.tag, &op.context);
  } else if (op.parts > 0) {
    rc = fi_trecvv(ep_.get(), op.iov.data(), op.descs.data(), op.parts, op.address, op.tag,
                   op.ignore, &op.context);
  } else {
    rc = fi_trecv(ep_.get(), op.buffer, op.bytes, op.desc, op.address, op.tag, op.ignore,
                  &op.context);
  }
  if (rc == 0) {
    op.posted = true;
    ++posted_;
    return true;
  }
  if (rc == -FI_EAGAIN) return false;
  int peer = op.channel->peer();
  return Status(Code::kRemoteError,
                fmt::format("ofi: posting a {} rank {} ({} bytes): {}", opName(op.kind), peer,
                            op.bytes, fiError(isSend(op.kind) ? "fi_tsend" : "fi_trecv", rc)),
                peer);
}

Status Endpoint::post(Op& op) {
  if (queued_.empty()) {
    Result<bool> posted = tryPost(op);
    if (!posted) return posted.status();
    if (*posted) return Status::ok();
  }
  queued_.push_back(&op);
  return Status::ok();
}

Result<bool> Endpoint::inject(Op& op) {
  if (!queued_.empty() || op.bytes > injectBytes_) return false;  // keep the order
  ssize_t rc = fi_tinject(ep_.get(), op.buffer, op.bytes, op.address, op.tag);
  if (rc == 0) return true;
  if (rc == -FI_EAGAIN) return false;  // e.g. rxm still connecting: the first message waits
  int peer = op.channel->peer();
  return Status(Code::kRemoteError,
                fmt::format("ofi: injecting a {} rank {} ({} bytes): {}", opName(op.kind), peer,
                            op.bytes, fiError("fi_tinject", rc)),
                peer);
}

Status Endpoint::readError() {
  fi_cq_err_entry entry{};
  ssize_t rc = fi_cq_readerr(cq_.get(), &entry, 0);
  if (rc == -FI_EAGAIN) return Status::ok();
  if (rc < 0) {
    error_ = systemError("ofi: rank {}: {}", rank_, fiError("fi_cq_readerr", rc));
    return error_;
  }
  char detail[256] = "";
  const char* provider =
      fi_cq_strerror(cq_.get(), entry.prov_errno, entry.err_data, detail, sizeof(detail));
  auto* op = static_cast<Op*>(entry.op_context);
  if (op != nullptr) released(*op);
  std::string what = fmt::format("{} ({}); provider: {}", fi_strerror(entry.err), entry.err,
                                 provider != nullptr ? provider : detail);
  if (op == nullptr || op->channel == nullptr) {
    error_ =
        Status(Code::kRemoteError, fmt::format("ofi: rank {}: completion error {}", rank_, what));
    return error_;
  }
  int peer = op->channel->peer();
  op->channel->fail(*op, Status(Code::kRemoteError,
                                fmt::format("ofi: {} rank {} failed on rank {}: {}",
                                            opName(op->kind), peer, rank_, what),
                                peer));
  return Status::ok();
}

Status Endpoint::progress() {
  if (!error_) return error_;
  bool completed = false;
  fi_cq_tagged_entry entries[kCqBatch];
  for (int round = 0; round < kCqRounds; ++round) {
    ssize_t n = fi_cq_read(cq_.get(), entries, kCqBatch);
    if (n == -FI_EAGAIN) break;
    if (n == -FI_EAVAIL) {
      TRN_TRY(readError());
      completed = true;
      continue;
    }
    if (n < 0) {
      error_ = systemError("ofi: rank {}: {}", rank_, fiError("fi_cq_read", n));
      return error_;
    }
    for (ssize_t i = 0; i < n; ++i) {
      auto* op = static_cast<Op*>(entries[i].op_context);
      released(*op);
      op->channel->complete(*op, entries[i].len);
      // The connection carried it, so it exists now: once per channel (sockets.h).
      if (sockets_ && op->channel->firstCompletion()) {
        const int set = sockets_->apply(rank_);
        TRN_INFO(kNet,
                 "ofi: rank {}: congestion control set on {} connection(s) at the first "
                 "message with rank {}",
                 rank_, set, op->channel->peer());
      }
    }
    completed = true;
    if (static_cast<size_t>(n) < kCqBatch) break;
  }
  cqReads_.fetch_add(1, std::memory_order_release);
  while (!queued_.empty()) {
    Op* op = queued_.front();
    Result<bool> posted = tryPost(*op);
    if (!posted) {
      op->channel->fail(*op, posted.status());
    } else if (!*posted) {
      break;
    }
    queued_.pop_front();
  }
  if (completed) bell_->ring();
  return Status::ok();
}

bool Endpoint::tryWait() {
  // fi_wait with no timeout: clears the set's signal, then finds the queue empty and nothing
  // signalled (-FI_ETIMEDOUT: sleep) or news (0).
  if (waitSet_) return fi_wait(waitSet_.get(), 0) == -FI_ETIMEDOUT;
  fid* fids[] = {&cq_->fid};
  return fi_trywait(fabric_.get(), fids, 1) == FI_SUCCESS;
}

bool Endpoint::bulk() const {
  return std::any_of(channels_.begin(), channels_.end(), [](const auto& c) { return c->bulk(); });
}

void Endpoint::startLiveness(std::chrono::milliseconds interval) {
  if (interval.count() <= 0 || liveness_.joinable()) return;
  liveness_ = startThread([this, interval] { runLiveness(interval); });
}

void Endpoint::runLiveness(std::chrono::milliseconds interval) {
  std::unique_lock wait(livenessMutex_);
  while (!livenessWake_.wait_for(wait, interval, [this] { return livenessStop_; })) {
    wait.unlock();
    bool failed = heartbeats_ && heartbeats_->tick(Clock::now());
    // Never waits for the executor: heartbeats must not stop while a call holds the lock
    // (and whoever holds it drives the provider anyway).
    if (std::unique_lock lock(mutex_, std::try_to_lock); lock.owns_lock()) {
      (void)progress();  // an endpoint error reaches the executor through its own calls
      for (auto& channel : channels_) (void)linkStatus(*channel, false);
    }
    if (failed) bell_->ring();  // let a sleeping executor see it
    wait.lock();
  }
}

void Endpoint::stopLiveness() {
  {
    std::lock_guard lock(livenessMutex_);
    livenessStop_ = true;
  }
  livenessWake_.notify_all();
  if (liveness_.joinable()) liveness_.join();
}

}  // namespace trnccl::transport::ofi
