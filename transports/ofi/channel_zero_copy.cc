// The channel's sends read in place (channel.h): which pieces may, and their registrations.
#include "transports/ofi/channel.h"
#include "transports/ofi/testing.h"

namespace trnccl::transport::ofi {

bool Channel::inPlace(const std::byte* src, size_t bytes) const {
  // A registered piece stays where it is however small: the user keeps it mapped and unchanged
  // until deregistering, and the call returns only after sendDone().
  if (config_.registered != nullptr && config_.registered->covers(src, bytes)) return true;
  return config_.zcopyBytes != 0 && bytes >= config_.zcopyBytes;
}

Result<bool> Channel::prepareZeroCopy(uint32_t index, const std::byte* src, size_t bytes) {
  MrCache* cache = endpoint_.mrCache();
  if (cache != nullptr && config_.registered != nullptr) {
    cache->dropDeregistered(*config_.registered);
  }
  if (!inPlace(src, bytes)) return false;
  const bool registered = config_.registered != nullptr && config_.registered->covers(src, bytes);
  Op& op = pieceOps_[index];
  Piece& piece = pieces_[index];
  op.desc = nullptr;  // what a provider without FI_MR_LOCAL gets
  if (cache != nullptr) {
    Result<MrCache::Lease> lease = cache->descriptor(src, bytes, config_.registered);
    if (!lease) return lease.status();
    if (!*lease) return false;  // unregistered host memory, or every registration in use
    op.desc = lease->desc;
    piece.registration = lease->entry;
  }
  if (registered) testing::counters().add(testing::Event::kRegisteredPieces);
  piece.footprint = 0;
  op.buffer = const_cast<std::byte*>(src);  // fi_tsend only reads it
  return true;
}

void Channel::releaseRegistration(Piece& piece) {
  if (piece.registration == nullptr) return;
  endpoint_.mrCache()->release(piece.registration);
  piece.registration = nullptr;
}

}  // namespace trnccl::transport::ofi
