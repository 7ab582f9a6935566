#include "transports/shm/shm_transport.h"

#include <unistd.h>

#include <algorithm>

#include "common/env.h"
#include "common/log.h"
#include "transports/core/setup.h"
#include "transports/shm/ll.h"
#include "transports/shm/segment.h"
#include "transports/shm/shm_connection.h"
#include "transports/shm/zero_copy.h"

namespace trnccl::transport::shm {
namespace {

constexpr int64_t kMinFifoBytes = 4096;
constexpr int64_t kLargeFifoBytes = 1 << 20;
constexpr int64_t kSmallFifoBytes = 256 << 10;
constexpr size_t kManyPeers = 8;  // above this, FIFOs shrink to bound /dev/shm use

// What each rank tells the others after creating its segment (first oob exchange).
struct Hello {
  int32_t ok = 0;
  int32_t pid = 0;
  int32_t segmentFd = -1;  // lets peers probe /proc/<pid>/fd access
  int32_t reserved = 0;
  uint64_t nonce = 0;  // equal for ranks of one process
  uint64_t probeAddress = 0;
  uint64_t probeValue = 0;
};

class Setup {
 public:
  Setup(SetupContext& ctx, const std::vector<int>& peers, std::shared_ptr<ArenaCache> arenas)
      : ctx_(ctx), peers_(peers), arenas_(std::move(arenas)) {}

  Result<std::vector<std::unique_ptr<Connection>>> run();

 private:
  Status createOwn();
  Status mapPeers(const std::vector<Hello>& hellos);
  std::vector<std::unique_ptr<Connection>> makeConnections(const std::vector<Hello>& hellos);

  SetupContext& ctx_;
  const std::vector<int>& peers_;
  std::shared_ptr<ArenaCache> arenas_;
  std::shared_ptr<Segment> own_;
  std::vector<std::shared_ptr<Segment>> remote_;  // indexed like peers_
  std::vector<uint32_t> outSlots_;
  uint64_t probeValue_ = processNonce() ^ 0x5eed'5eed'5eed'5eedULL;  // peers read it by CMA
};

Status Setup::createOwn() {
  if (peers_.empty()) return Status::ok();  // nobody writes to this rank: no segment
  int64_t fallback = peers_.size() <= kManyPeers ? kLargeFifoBytes : kSmallFifoBytes;
  int64_t fifo = env::getInt("TRNCCL_SHM_FIFO_BYTES", fallback);
  if (fifo <= 0) return invalidArgument("shm: TRNCCL_SHM_FIFO_BYTES={} must be positive", fifo);
  // Records are 32 bytes and must never straddle the end of the ring: keep it a multiple of 64.
  uint64_t bytes = std::max<uint64_t>(kMinFifoBytes, (static_cast<uint64_t>(fifo) + 63) / 64 * 64);
  Result<std::shared_ptr<Segment>> segment =
      Segment::create(segmentName(ctx_.commHash, ctx_.rank, processNonce()), ctx_.commHash,
                      ctx_.rank, peers_.data(), static_cast<uint32_t>(peers_.size()), bytes);
  if (!segment) return segment.status();
  own_ = std::move(*segment);
  Result<uint32_t> ll = llThresholdFromEnv();
  if (!ll) return ll.status();
  for (uint32_t slot = 0; slot < own_->slots(); ++slot) {
    own_->ctrl(slot)->llThreshold = *ll;
    initLlArea(own_->data(slot), bytes, *ll);
  }
  TRN_INFO(kShm, "shm: rank {} created {} with {} FIFOs of {} bytes", ctx_.rank, own_->name(),
           peers_.size(), bytes);
  return Status::ok();
}

Status Setup::mapPeers(const std::vector<Hello>& hellos) {
  bool allowCma = env::getInt("TRNCCL_SHM_CMA", 1) != 0;
  bool allowArena = env::getInt("TRNCCL_SHM_ARENA_MAP", 1) != 0;
  uint64_t nonce = processNonce();
  for (size_t i = 0; i < peers_.size(); ++i) {
    int peer = peers_[i];
    const Hello& hello = hellos[static_cast<size_t>(peer)];
    Result<std::shared_ptr<Segment>> segment =
        Segment::open(segmentName(ctx_.commHash, peer, hello.nonce), ctx_.commHash, peer);
    if (!segment) return segment.status();
    int slot = (*segment)->slotOf(ctx_.rank);
    if (slot < 0 || (*segment)->header()->ownerPid != hello.pid) {
      return Status(Code::kInternalError,
                    fmt::format("shm: rank {} has no FIFO for rank {} (pid {} vs {}); were "
                                "transports chosen asymmetrically?",
                                peer, ctx_.rank, (*segment)->header()->ownerPid, hello.pid),
                    peer);
    }
    remote_.push_back(std::move(*segment));
    outSlots_.push_back(static_cast<uint32_t>(slot));
    // What this rank can read of the peer's memory; the peer reads it from our header.
    uint32_t caps = 0;
    if (hello.nonce != nonce) {
      if (allowCma && probeCma(hello.pid, hello.probeAddress, hello.probeValue)) caps |= kCapCma;
      if (allowArena && probeProcFd(hello.pid, hello.segmentFd)) caps |= kCapArenaMap;
    }
    own_->ctrl(static_cast<uint32_t>(i))->receiverCaps = caps;
  }
  return Status::ok();
}

std::vector<std::unique_ptr<Connection>> Setup::makeConnections(const std::vector<Hello>& hellos) {
  int64_t zcopy = env::getInt("TRNCCL_SHM_ZCOPY_BYTES", static_cast<int64_t>(kDefaultZcopyBytes));
  std::vector<std::unique_ptr<Connection>> connections;
  for (size_t i = 0; i < peers_.size(); ++i) {
    const Hello& hello = hellos[static_cast<size_t>(peers_[i])];
    PeerLink link;
    link.self = ctx_.rank;
    link.peer = peers_[i];
    link.peerPid = hello.pid;
    link.sameProcess = hello.nonce == processNonce();
    link.own = own_;
    link.remote = remote_[i];
    link.inSlot = static_cast<uint32_t>(i);
    link.outSlot = outSlots_[i];
    link.peerCaps = remote_[i]->ctrl(outSlots_[i])->receiverCaps;
    link.zcopyBytes = zcopy > 0 ? static_cast<size_t>(zcopy) : 0;
    link.arenas = arenas_;
    link.locate = ctx_.locate;
    link.registered = ctx_.registered;
    auto connection = std::make_unique<ShmConnection>(std::move(link));
    TRN_INFO(kShm,
             "shm: rank {} -> rank {} (pid {}): {}, threshold {} bytes, FIFO {} bytes, LL up to {} "
             "bytes",
             ctx_.rank, peers_[i], hello.pid, connection->sendMode(), zcopy,
             remote_[i]->fifoBytes(), remote_[i]->ctrl(outSlots_[i])->llThreshold);
    connections.push_back(std::move(connection));
  }
  return connections;
}

Result<std::vector<std::unique_ptr<Connection>>> Setup::run() {
  Status local = checkSetup(ctx_, peers_, "shm");
  if (ctx_.oob == nullptr) return local;  // cannot tell the other ranks
  if (local) local = createOwn();
  Hello mine;
  mine.ok = local.isOk();
  mine.pid = static_cast<int32_t>(::getpid());
  mine.segmentFd = own_ ? own_->fd() : -1;
  mine.nonce = processNonce();
  mine.probeAddress = reinterpret_cast<uintptr_t>(&probeValue_);
  mine.probeValue = probeValue_;
  Result<std::vector<Hello>> hellos = exchange(ctx_, mine, "shm");
  if (!hellos) return hellos.status();  // own_'s destructor unlinks the name
  TRN_TRY(firstFailure(local, *hellos, "shm", "create its shm segment"));

  local = mapPeers(*hellos);
  TRN_TRY(agree(ctx_, local, "shm", "map its shm peers"));

  // Every peer has mapped this segment: drop the name now, so that a crash from here on
  // leaves nothing in /dev/shm (the mappings keep the memory alive).
  if (own_) {
    TRN_TRY(own_->unlink());
    own_->closeFd();
    ctx_.bell->rebind(&own_->header()->bell, own_);
  }
  // Once any rank returns, every rank has unlinked: no name outlives a setup that succeeded,
  // even if a rank dies right after it.
  TRN_TRY(ctx_.oob->barrier());
  return makeConnections(*hellos);
}

class ShmTransport final : public Transport {
 public:
  const char* name() const override { return "shm"; }
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return self.hostHash == peer.hostHash && self.bootId == peer.bootId;
  }
  Result<std::vector<std::unique_ptr<Connection>>> connect(
      SetupContext& ctx, const std::vector<int>& peerRanks) override {
    return Setup(ctx, peerRanks, arenas_).run();
  }

 private:
  std::shared_ptr<ArenaCache> arenas_ = std::make_shared<ArenaCache>();
};

}  // namespace
}  // namespace trnccl::transport::shm

namespace trnccl::transport {

std::unique_ptr<Transport> makeShmTransport() { return std::make_unique<shm::ShmTransport>(); }

}  // namespace trnccl::transport
