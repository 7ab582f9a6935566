// The oob exchanges of the TCP transport's setup: allGather of one fixed-size record per rank.
#pragma once

#include <cstring>
#include <span>
#include <vector>

#include "common/status.h"
#include "transports/core/transport.h"

namespace trnccl::transport::tcp {

// Every rank takes part in each exchange even after a local failure, so all ranks make the same
// oob calls and fail together instead of hanging.
template <typename T>
Result<std::vector<T>> exchange(SetupContext& ctx, const T& mine) {
  Result<std::vector<std::byte>> all =
      ctx.oob->allGather(std::as_bytes(std::span<const T>(&mine, 1)));
  if (!all) return all.status();
  if (all->size() != sizeof(T) * static_cast<size_t>(ctx.nranks)) {
    return internalError("tcp: oob allGather returned {} bytes, expected {} x {}", all->size(),
                         ctx.nranks, sizeof(T));
  }
  std::vector<T> out(static_cast<size_t>(ctx.nranks));
  std::memcpy(out.data(), all->data(), all->size());
  return out;
}

// This rank's error if it had one, else an error naming the first rank whose `ok` is 0.
template <typename T>
Status firstFailure(const Status& local, const std::vector<T>& all, const char* step) {
  if (!local) return local;
  for (size_t r = 0; r < all.size(); ++r) {
    if (!all[r].ok) {
      int rank = static_cast<int>(r);
      return Status(Code::kRemoteError,
                    fmt::format("tcp: rank {} failed to {}; see its error", rank, step), rank);
    }
  }
  return Status::ok();
}

struct Verdict {
  int32_t ok = 0;
};

}  // namespace trnccl::transport::tcp
