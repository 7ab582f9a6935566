// One rank's libfabric endpoint for one communicator: fabric, domain, completion queue,
// address vector (FI_AV_TABLE) and an RDM endpoint, each owned by a unique_ptr (fid.h), plus
// the per-peer channels (channel.h) whose operations complete on its queue.
//
// Progress: every call of a connection takes the endpoint's lock and runs progress(), which
// reads the completion queue (driving a manual-progress provider), hands each completion to
// its channel, retries operations the provider refused with -FI_EAGAIN (queued in order), and
// rings the communicator's doorbell when anything completed. The executor calls them over and
// over while it spins and yields (its backoff), so it drives the provider itself. When it
// blocks and the completion queue has a file-descriptor wait object, it sleeps on the doorbell
// once fi_trywait allows it (tryWait()), and a small thread (waker.h) rings it when the
// descriptor turns readable: once, or at every arrival while a large message is in flight
// (bulk()); the thread never calls into libfabric and sleeps while nobody blocks.
//
// Registration: when the provider needs local registration (FI_MR_LOCAL in mr_mode) or
// TRNCCL_OFI_MR_LOCAL=1 says to behave as if it did, the channels register their own buffers
// with the domain and the endpoint keeps a registration cache (mr_cache.h) for zero-copy sends
// from device memory.
//
// Liveness (transports/core/liveness.h): the heartbeats travel on an endpoint of their own
// (heartbeat.h, owned here). Once setup is done, startLiveness() starts a thread that wakes
// every heartbeat interval, lets the heartbeats tick (under their own lock: a long call on this
// endpoint does not hold them up), then takes this endpoint's lock, runs progress() and fails
// each channel whose link failed (a failed heartbeat, or silence past the liveness timeout) so
// that its later calls report it. The thread sleeps between ticks. linkStatus() is the same
// check at the executor's pace.
//
// Destruction: stops the liveness thread, lingers (TRNCCL_OFI_LINGER_MS, default 2000) while
// sends are still in flight on channels whose link has not failed so the peers get the last
// bytes, closes the heartbeats (a goodbye to every peer first), cancels every operation the
// provider still holds (fi_cancel: the pre-posted receives, sends stuck on a failed
// connection) and reads the completion queue until their completions have arrived (at most
// 500 ms): closing an endpoint with operations in flight crashed rxm's fi_close after a
// liveness timeout. Then it closes the endpoint, address vector, completion queue, the
// channels' registered buffers, the cached registrations, the domain and the fabric, in that
// order.
#pragma once

#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>
#include <sys/uio.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "common/memory_location.h"
#include "common/status.h"
#include "common/wait.h"
#include "transports/ofi/fid.h"

namespace trnccl::transport::ofi {

class Channel;
class Heartbeats;
class MrCache;
class ProviderSockets;
class Waker;

enum class OpKind : uint8_t { kSendHeader, kSendData, kRecvHeader, kRecvData };
const char* opName(OpKind kind);
inline bool isSend(OpKind kind) { return kind <= OpKind::kSendData; }

// One posted (or queued) operation. Lives at a stable address in its channel for as long as
// the provider may use it.
struct Op {
  fi_context2 context{};  // first: the provider's scratch space (FI_CONTEXT2); a completion's
                          // op_context points here, hence at the Op
  Channel* channel = nullptr;
  OpKind kind = OpKind::kSendData;
  uint32_t index = 0;  // slot within the channel
  void* buffer = nullptr;
  size_t bytes = 0;
  void* desc = nullptr;
  fi_addr_t address = FI_ADDR_UNSPEC;
  uint64_t tag = 0;
  uint64_t ignore = 0;  // tag bits a receive does not match on
  // A send of two parts (fi_tsendv): a header from the ring, then the caller's bytes in place
  // (channel.h), or a receive of two (fi_trecvv): a first piece's header into its slot, the
  // payload in place (channel_recv.cc); 0: one part, `buffer`.
  size_t parts = 0;
  std::array<iovec, 2> iov{};
  std::array<void*, 2> descs{};
  bool posted = false;  // the provider holds it: its completion (or error) has not arrived
};

class Endpoint {
 public:
  // Opens everything for `info` (fi_dupinfo'd, owned from here on).
  static Result<std::shared_ptr<Endpoint>> open(InfoPtr info, int rank, Doorbell* bell,
                                                MemoryLocator locate);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // This endpoint's address (fi_getname).
  Result<std::vector<std::byte>> name() const;
  // Inserts a peer's address; returns its fi_addr_t. Once a channel's first operation
  // completed, its connection exists and the endpoint's connections get the congestion
  // control of transports/core/congestion.h (sockets.h).
  Result<fi_addr_t> insert(std::span<const std::byte> name, int peer);
  // Takes ownership of a channel; it lives until the endpoint closes.
  Channel& adopt(std::unique_ptr<Channel> channel);
  // Takes ownership of the heartbeats of this endpoint's links (none: no liveness checks).
  void useHeartbeats(std::unique_ptr<Heartbeats> heartbeats);
  Heartbeats* heartbeats() const { return heartbeats_.get(); }
  // Starts the liveness thread (every `interval`; 0: none). After the last adopt().
  void startLiveness(std::chrono::milliseconds interval);
  // The channel's error, else its link's (heartbeat.h; `awaited`: this rank waits for the
  // peer's data), which then fails the channel. Under the lock.
  Status linkStatus(Channel& channel, bool awaited);

  // Posts `op` now, or queues it behind operations refused with -FI_EAGAIN.
  Status post(Op& op);
  // Sends `op` (a send of at most injectBytes()) with fi_tinject: the provider copies it and
  // reports no completion, so the op and its buffer are free again on true. False: not sent
  // (the provider refused it for now, or operations are queued): post() it instead.
  Result<bool> inject(Op& op);
  // Whether a send may have two parts (Op::parts; the provider's iov_limit).
  bool gathers() const { return info_->tx_attr->iov_limit >= 2; }
  // Whether a receive may have two parts (Op::parts).
  bool scatters() const { return info_->rx_attr->iov_limit >= 2; }
  // Largest send inject() takes: the provider's inject_size (0 with TRNCCL_OFI_INJECT=0).
  size_t injectBytes() const { return injectBytes_; }
  // Reads completions, retries queued operations; an error concerns the whole endpoint.
  Status progress();

  std::mutex& mutex() { return mutex_; }
  const fi_info& info() const { return *info_; }
  int rank() const { return rank_; }
  // Domain to register buffers with, null when the provider does not need registration.
  fid_domain* registrationDomain() const { return mrLocal_ ? domain_.get() : nullptr; }
  // Registrations for zero-copy sends; null exactly when registrationDomain() is.
  MrCache* mrCache() const { return mrCache_.get(); }
  size_t maxMessageBytes() const { return info_->ep_attr->max_msg_size; }
  bool hasWaker() const { return waker_ != nullptr; }
  // The completion queue's wait descriptor and its thread (waker.h); null: poll only.
  Waker* waker() const { return waker_.get(); }
  // fi_trywait on the completion queue (fi_wait on its wait set where the provider's trywait
  // does nothing: xnet, endpoint.cc), under the lock: true when a waiter may block (its
  // descriptor will turn readable for what comes next), false when completions (or bytes the
  // provider read ahead) wait for progress().
  bool tryWait();
  // A message too large for a header slot is being sent or received on a channel (under the
  // lock): the executor should keep the queue read while it streams (waker.h).
  bool bulk() const;

 private:
  Endpoint(InfoPtr info, int rank, Doorbell* bell, MemoryLocator locate);
  Status openObjects();
  Result<bool> tryPost(Op& op);
  Status readError();
  void drain();
  void cancelAll();
  void released(Op& op);  // its completion (or error) arrived: the provider let go of it
  void runLiveness(std::chrono::milliseconds interval);
  void stopLiveness();

  InfoPtr info_;
  int rank_;
  Doorbell* bell_;
  MemoryLocator locate_;  // for the registration cache
  std::mutex mutex_;
  std::atomic<uint64_t> cqReads_{0};  // the waker waits for it to move after a ring (waker.h)
  Status error_;
  std::deque<Op*> queued_;
  size_t posted_ = 0;     // operations the provider holds (Op::posted)
  bool mrLocal_ = false;  // register local buffers (FI_MR_LOCAL or TRNCCL_OFI_MR_LOCAL=1)
  size_t injectBytes_ = 0;
  std::unique_ptr<ProviderSockets> sockets_;  // null: not a TCP provider's, or left alone

  // Destroyed in reverse: waker, endpoint, address vector, completion queue, its wait set,
  // heartbeats, channels (their registrations; they hold leases of the cache), cached
  // registrations, domain, fabric.
  FabricPtr fabric_{nullptr, {"fabric"}};
  DomainPtr domain_{nullptr, {"domain"}};
  std::unique_ptr<MrCache> mrCache_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::unique_ptr<Heartbeats> heartbeats_;  // closed by the destructor, before cancelAll()
  WaitPtr waitSet_{nullptr, {"wait set"}};  // the queue's, where fi_trywait cannot be trusted
  CqPtr cq_{nullptr, {"completion queue"}};
  AvPtr av_{nullptr, {"address vector"}};
  EpPtr ep_{nullptr, {"endpoint"}};
  std::unique_ptr<Waker> waker_;

  // The heartbeat thread (startLiveness); stopped first by the destructor.
  std::thread liveness_;
  std::mutex livenessMutex_;
  std::condition_variable livenessWake_;
  bool livenessStop_ = false;  // under livenessMutex_
};

}  // namespace trnccl::transport::ofi
