#include "transports/core/setup.h"

#include <set>

namespace trnccl::transport {

Status checkSetup(const SetupContext& ctx, std::span<const int> peerRanks, const char* transport) {
  if (ctx.oob == nullptr) {
    return invalidArgument("{}: setup context without an oob channel", transport);
  }
  if (ctx.bell == nullptr || ctx.peers.size() != static_cast<size_t>(ctx.nranks)) {
    return invalidArgument("{}: setup context without a doorbell or with {} peers for {} ranks",
                           transport, ctx.peers.size(), ctx.nranks);
  }
  std::set<int> seen;
  for (int peer : peerRanks) {
    if (peer < 0 || peer >= ctx.nranks || peer == ctx.rank || !seen.insert(peer).second) {
      return invalidArgument("{}: rank {} cannot connect to rank {} (of {}, duplicate or self?)",
                             transport, ctx.rank, peer, ctx.nranks);
    }
  }
  return Status::ok();
}

Status firstFailure(const Status& local, std::span<const int32_t> ok, const char* transport,
                    const char* step) {
  if (!local) return local;
  for (size_t r = 0; r < ok.size(); ++r) {
    if (!ok[r]) {
      int rank = static_cast<int>(r);
      return Status(Code::kRemoteError,
                    fmt::format("{}: rank {} failed to {}; see its error", transport, rank, step),
                    rank);
    }
  }
  return Status::ok();
}

Status agree(SetupContext& ctx, const Status& local, const char* transport, const char* step) {
  Result<std::vector<int32_t>> ok = exchange(ctx, int32_t{local.isOk()}, transport);
  if (!ok) return ok.status();
  return firstFailure(local, *ok, transport, step);
}

}  // namespace trnccl::transport
