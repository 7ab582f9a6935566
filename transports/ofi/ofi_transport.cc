#include "transports/ofi/ofi_transport.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>

#include "common/env.h"
#include "common/log.h"
#include "transports/core/liveness.h"
#include "transports/core/setup.h"
#include "transports/ofi/channel.h"
#include "transports/ofi/endpoint.h"
#include "transports/ofi/heartbeat.h"
#include "transports/ofi/ofi_connection.h"
#include "transports/ofi/provider.h"
#include "transports/ofi/wire.h"

namespace trnccl::transport::ofi {
namespace {

constexpr int64_t kDefaultPieceBytes = 1 << 20;
constexpr int64_t kDefaultBufferBytes = 4 << 20;
constexpr size_t kMinPieceBytes = 4096;
constexpr size_t kMinRecvSlots = 2;

// What each rank tells the others: whether it is ready, its endpoint's name, its piece and
// header slot sizes (wire.h; the pair takes the smaller of each), the size above which it takes
// messages as placed pieces (channel.h; provider.h placeBytes for the pair's), its liveness timeout
// (transports/core/liveness.h) and its heartbeat endpoint's name (none over libfabric's shm
// provider).
struct NameBlob {
  int32_t ok = 0;
  uint32_t nameBytes = 0;
  uint64_t pieceBytes = 0;
  uint64_t headerSlotBytes = 0;
  uint32_t livenessMs = 0;
  uint32_t beatNameBytes = 0;
  uint64_t placeBytes = 0;  // placed messages from above this size (0: none; channel.h)
  std::array<char, 216> name{};
  std::array<char, 256> beatName{};
};
static_assert(sizeof(NameBlob) == 512);

// Copies an endpoint's name into a blob's field; false when it does not fit.
template <size_t N>
bool putName(const std::vector<std::byte>& name, std::array<char, N>& to, uint32_t& bytes) {
  if (name.size() > N) return false;
  std::memcpy(to.data(), name.data(), name.size());
  bytes = static_cast<uint32_t>(name.size());
  return true;
}

size_t envBytes(const char* name, int64_t fallback) {
  int64_t value = env::getInt(name, fallback);
  if (value <= 0) {
    TRN_WARN(kNet, "ofi: {}={} is not positive; using {}", name, value, fallback);
    value = fallback;
  }
  return static_cast<size_t>(value);
}

class Setup {
 public:
  Setup(SetupContext& ctx, const std::vector<int>& peers) : ctx_(ctx), peers_(peers) {}
  Result<std::vector<std::unique_ptr<Connection>>> run();

 private:
  Status validate() const;
  Status open();
  Status describeSelf(NameBlob& mine) const;
  Status connectPeers(const std::vector<NameBlob>& blobs);
  Status addHeartbeats(const NameBlob& blob, int peer, Channel& channel);
  bool singleHost() const;

  SetupContext& ctx_;
  const std::vector<int>& peers_;
  std::shared_ptr<Endpoint> endpoint_;
  std::vector<Channel*> channels_;  // indexed like peers_
  size_t pieceBytes_ = 0;
  size_t headerSlotBytes_ = 0;
  size_t streamBytes_ = 0;
  size_t placeBytes_ = 0;
  size_t zcopyBytes_ = 0;
  const char* where_ = "ofi";  // the provider's name, for errors
  std::chrono::milliseconds liveness_{livenessTimeout()};
};

Status Setup::validate() const {
  TRN_TRY(checkSetup(ctx_, peers_, "ofi"));
  if (ctx_.nranks > kMaxRanks) {
    return invalidArgument("ofi: {} ranks; the tag layout allows {}", ctx_.nranks, kMaxRanks);
  }
  return Status::ok();
}

bool Setup::singleHost() const {
  const PeerInfo& self = ctx_.peers[static_cast<size_t>(ctx_.rank)];
  return std::all_of(ctx_.peers.begin(), ctx_.peers.end(), [&](const PeerInfo& p) {
    return p.hostHash == self.hostHash && p.bootId == self.bootId;
  });
}

Status Setup::open() {
  if (peers_.empty()) return Status::ok();
  Result<InfoPtr> info = chooseProvider(singleHost());
  if (!info) return info.status();
  std::string description = describe(**info);
  size_t maxMessage = (*info)->ep_attr->max_msg_size;
  // A first piece carries the message's header too (wire.h).
  pieceBytes_ = std::min(envBytes("TRNCCL_OFI_PIECE_BYTES", kDefaultPieceBytes),
                         maxMessage - std::min(maxMessage, kHeaderBytes));
  pieceBytes_ = std::max(pieceBytes_, kMinPieceBytes);
  std::string eager = tuneProvider(**info, pieceBytes_ + kHeaderBytes);
  headerSlotBytes_ = headerSlotBytes(**info);
  streamBytes_ = streamBytes(**info);
  zcopyBytes_ = zeroCopyBytes(**info);
  const size_t place = placeBytes(**info);
  Result<std::shared_ptr<Endpoint>> endpoint =
      Endpoint::open(std::move(*info), ctx_.rank, ctx_.bell, ctx_.locate);
  if (!endpoint) return endpoint.status();
  endpoint_ = std::move(*endpoint);
  placeBytes_ = endpoint_->registrationDomain() == nullptr ? place : 0;
  TRN_INFO(kNet, "ofi: rank {} opened {} ({}waker{}{}) for {} peers", ctx_.rank, description,
           endpoint_->hasWaker() ? "" : "no ", eager.empty() ? "" : ", rxm eager limit ", eager,
           peers_.size());
  // Liveness guards network links. libfabric's shm provider stays on the host, where a dead
  // peer is found by the peer check; its endpoints also crashed (SIGSEGV in the provider's
  // lock) when a heartbeat thread posted beside the executor under ASan, so no heartbeats.
  const fi_fabric_attr* fabric = endpoint_->info().fabric_attr;
  where_ = fabric != nullptr && fabric->prov_name != nullptr ? fabric->prov_name : "ofi";
  if (std::string_view(where_) == "shm") return Status::ok();
  Result<std::unique_ptr<Heartbeats>> beats = Heartbeats::open(endpoint_->info(), ctx_.rank);
  if (!beats) return beats.status();
  endpoint_->useHeartbeats(std::move(*beats));
  return Status::ok();
}

Status Setup::describeSelf(NameBlob& mine) const {
  Result<std::vector<std::byte>> name = endpoint_->name();
  if (!name) return name.status();
  if (!putName(*name, mine.name, mine.nameBytes)) {
    return internalError("ofi: endpoint name of {} bytes exceeds {}", name->size(),
                         mine.name.size());
  }
  if (Heartbeats* beats = endpoint_->heartbeats()) {
    Result<std::vector<std::byte>> beatName = beats->name();
    if (!beatName) return beatName.status();
    if (!putName(*beatName, mine.beatName, mine.beatNameBytes)) {
      return internalError("ofi: heartbeat endpoint name of {} bytes exceeds {}", beatName->size(),
                           mine.beatName.size());
    }
  }
  mine.pieceBytes = pieceBytes_;
  mine.headerSlotBytes = headerSlotBytes_;
  mine.placeBytes = placeBytes_;
  mine.livenessMs = static_cast<uint32_t>(
      std::min<int64_t>(liveness_.count(), std::numeric_limits<uint32_t>::max()));
  return Status::ok();
}

Status Setup::addHeartbeats(const NameBlob& blob, int peer, Channel& channel) {
  Heartbeats* beats = endpoint_->heartbeats();
  if (beats == nullptr) return Status::ok();
  if (blob.beatNameBytes == 0 || blob.beatNameBytes > blob.beatName.size()) {
    return Status(Code::kInternalError,
                  fmt::format("ofi: rank {} sent no heartbeat endpoint name", peer), peer);
  }
  Heartbeats::PeerConfig config;
  config.peer = peer;
  config.name = std::as_bytes(std::span<const char>(blob.beatName.data(), blob.beatNameBytes));
  config.interval = heartbeatInterval(liveness_, std::chrono::milliseconds(blob.livenessMs));
  config.timeout = liveness_;
  config.heard = &channel.heard();
  config.where = where_;
  return beats->add(config);
}

Status Setup::connectPeers(const std::vector<NameBlob>& blobs) {
  size_t buffer = envBytes("TRNCCL_OFI_BUFFER_BYTES", kDefaultBufferBytes);
  for (int peer : peers_) {
    const NameBlob& blob = blobs[static_cast<size_t>(peer)];
    if (blob.nameBytes == 0 || blob.nameBytes > blob.name.size() || blob.pieceBytes == 0 ||
        blob.headerSlotBytes <= kHeaderBytes) {
      return Status(Code::kInternalError,
                    fmt::format("ofi: rank {} sent no endpoint name (were transports chosen "
                                "asymmetrically?)",
                                peer),
                    peer);
    }
    Result<fi_addr_t> address = endpoint_->insert(
        std::as_bytes(std::span<const char>(blob.name.data(), blob.nameBytes)), peer);
    if (!address) return address.status();
    ChannelConfig config;
    config.self = ctx_.rank;
    config.peer = peer;
    config.address = *address;
    config.pieceBytes = std::min<size_t>(pieceBytes_, blob.pieceBytes);
    config.sendRingBytes = std::max(buffer, config.pieceBytes + kHeaderBytes);
    config.recvSlots =
        std::max(kMinRecvSlots, (buffer + config.pieceBytes - 1) / config.pieceBytes);
    config.zcopyBytes = zcopyBytes_;
    config.headerSlotBytes = std::min<size_t>(headerSlotBytes_, blob.headerSlotBytes);
    config.streamBytes = streamBytes_;
    config.placeBytes = placeBytes_ == 0 || blob.placeBytes == 0
                            ? 0
                            : std::max<size_t>(placeBytes_, blob.placeBytes);
    config.registered = ctx_.registered;
    Channel& channel = endpoint_->adopt(std::make_unique<Channel>(*endpoint_, config));
    {
      std::lock_guard lock(endpoint_->mutex());
      TRN_TRY(channel.start());
    }
    channels_.push_back(&channel);
    TRN_TRY(addHeartbeats(blob, peer, channel));
  }
  // Every pair's heartbeat connection up before the silence clock starts (heartbeat.h).
  if (Heartbeats* beats = endpoint_->heartbeats()) TRN_TRY(beats->greet(ctx_.deadline));
  return Status::ok();
}

Result<std::vector<std::unique_ptr<Connection>>> Setup::run() {
  Status local = validate();
  if (ctx_.oob == nullptr) return local;  // cannot tell the other ranks
  if (local) local = open();
  NameBlob mine;
  if (local && endpoint_) local = describeSelf(mine);
  mine.ok = local.isOk();
  Result<std::vector<NameBlob>> blobs = exchange(ctx_, mine, "ofi");
  if (!blobs) return blobs.status();
  TRN_TRY(firstFailure(local, *blobs, "ofi", "open its libfabric endpoint"));

  if (endpoint_) local = connectPeers(*blobs);
  TRN_TRY(agree(ctx_, local, "ofi", "connect its libfabric peers"));

  if (endpoint_ && endpoint_->heartbeats()) {
    endpoint_->startLiveness(endpoint_->heartbeats()->fastest());
  }
  std::vector<std::unique_ptr<Connection>> connections;
  for (Channel* channel : channels_) {
    connections.push_back(std::make_unique<OfiConnection>(endpoint_, *channel));
  }
  return connections;
}

class OfiTransport final : public Transport {
 public:
  const char* name() const override { return "ofi"; }
  bool canConnect(const PeerInfo&, const PeerInfo&) const override { return providerList().isOk(); }
  Result<std::vector<std::unique_ptr<Connection>>> connect(
      SetupContext& ctx, const std::vector<int>& peerRanks) override {
    return Setup(ctx, peerRanks).run();
  }
};

}  // namespace
}  // namespace trnccl::transport::ofi

namespace trnccl::transport {

std::unique_ptr<Transport> makeOfiTransport() { return std::make_unique<ofi::OfiTransport>(); }

}  // namespace trnccl::transport
