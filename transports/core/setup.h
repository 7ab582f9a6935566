// What every transport's collective setup (Transport::connect) shares: checking the context it
// was given, exchanging one fixed-size record per rank over the oob channel, and agreeing on
// whether every rank succeeded.
//
// A setup is collective, so every rank makes the same oob calls even after a local failure:
// it says so in its record (`ok`), and every rank then returns an error together (its own, or
// one naming the first rank that failed) instead of one rank leaving the others in an
// allGather that never completes.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "common/status.h"
#include "transports/core/transport.h"

namespace trnccl::transport {

// Whether `ctx` and `peerRanks` make sense: an oob channel, a doorbell, a PeerInfo per rank,
// and peers that are other ranks, each once. `transport` names it in the message. Without an
// oob channel the caller cannot tell the other ranks and must return at once.
Status checkSetup(const SetupContext& ctx, std::span<const int> peerRanks, const char* transport);

// Every rank's `mine`, in rank order, over ctx.oob.
template <typename T>
Result<std::vector<T>> exchange(SetupContext& ctx, const T& mine, const char* transport) {
  static_assert(std::is_trivially_copyable_v<T>, "oob records travel as bytes");
  Result<std::vector<std::byte>> all =
      ctx.oob->allGather(std::as_bytes(std::span<const T>(&mine, 1)));
  if (!all) return all.status();
  if (all->size() != sizeof(T) * static_cast<size_t>(ctx.nranks)) {
    return internalError("{}: oob allGather returned {} bytes, expected {} x {}", transport,
                         all->size(), ctx.nranks, sizeof(T));
  }
  std::vector<T> out(static_cast<size_t>(ctx.nranks));
  std::memcpy(out.data(), all->data(), all->size());
  return out;
}

// `local` if this rank failed, else an error naming the first rank whose `ok` is 0 (indexed by
// rank), else ok. `step` completes "rank N failed to ...".
Status firstFailure(const Status& local, std::span<const int32_t> ok, const char* transport,
                    const char* step);

// The same over exchanged records with an `ok` member.
template <typename T>
requires requires(const T& record) { record.ok; }
Status firstFailure(const Status& local, const std::vector<T>& all, const char* transport,
                    const char* step) {
  std::vector<int32_t> ok;
  ok.reserve(all.size());
  for (const T& record : all) ok.push_back(record.ok);
  return firstFailure(local, ok, transport, step);
}

// Exchanges only whether each rank succeeded at `step`; firstFailure of the answers.
Status agree(SetupContext& ctx, const Status& local, const char* transport, const char* step);

}  // namespace trnccl::transport
