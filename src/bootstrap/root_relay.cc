// The bootstrap root after check-in (root_impl.h): it relays allGather rounds (barrier is an
// empty one) and broadcast rounds (rank 0's bytes to every rank), collects goodbyes, and fails
// every rank when one revokes the communicator (with the revoke's message, if it carries one). A
// rank that sends anything else, or leaves without a goodbye, fails the communicator (onLost,
// bootstrap_root.cc).
#include <boost/asio/read.hpp>

#include "bootstrap/root_impl.h"
#include "common/log.h"

namespace trnccl::bootstrap {

void RootService::Impl::readFrame(const ConnPtr& c) {
  asio::async_read(c->socket(), asio::buffer(c->inHeader), [this, c](const ErrorCode& ec, size_t) {
    if (ec) return onLost(c, ec.message());
    wire::Header h = wire::decode(c->inHeader);
    net::HeaderCheck check = wire::check(h, wire::kMaxGatherBytes);
    if (!check.ok()) return onLost(c, fmt::format("sent an invalid frame: {}", check.problem));
    const bool goodbye = h.type == wire::Type::kGoodbye, revoke = h.type == wire::Type::kRevoke;
    const bool block = h.type == wire::Type::kGather || h.type == wire::Type::kBroadcast;
    if ((!block && !goodbye && !revoke) || (goodbye && h.length != 0) ||
        (revoke && h.length > wire::kMaxErrorBytes)) {
      return onLost(c, fmt::format("sent an invalid frame (type {}, {} bytes)",
                                   static_cast<int>(h.type), h.length));
    }
    c->inBody.resize(h.length);
    asio::async_read(c->socket(), asio::buffer(c->inBody),
                     [this, c, h](const ErrorCode& e, size_t) {
                       if (e) return onLost(c, e.message());
                       onFrame(c, h);
                     });
  });
}

void RootService::Impl::onFrame(const ConnPtr& c, const wire::Header& h) {
  if (!c->open()) return;
  if (phase_ == Phase::kDone) return readFrame(c);  // failed: wait for the rank to close
  if (h.type == wire::Type::kGoodbye) return onGoodbye(c);
  if (h.type == wire::Type::kRevoke) {
    // The rank is alive and says the communicator is broken: every rank must stop using it.
    if (!c->inBody.empty()) {  // in its own words (a tier relaying another session's failure)
      return failAll(
          wire::codeFromWire(h.arg), -1,
          std::string(reinterpret_cast<const char*>(c->inBody.data()), c->inBody.size()));
    }
    return failAll(
        Code::kRemoteError, c->rank,
        fmt::format("bootstrap: rank {} revoked the communicator (trncclCommRevoke)", c->rank));
  }
  if (phase_ != Phase::kServing) return onLost(c, "sent allGather before init completed");
  onGather(c, h.type);
}

void RootService::Impl::onGather(const ConnPtr& c, wire::Type type) {
  if (round_[c->rank].has_value()) return onLost(c, "sent two allGather blocks in one round");
  if (gathered_ == 0) roundType_ = type;
  if (type != roundType_ ||
      (type == wire::Type::kBroadcast && c->rank != 0 && !c->inBody.empty())) {
    return failAll(Code::kInvalidUsage, c->rank,
                   fmt::format("bootstrap: rank {} sent {} in a round of {}", c->rank,
                               type == wire::Type::kBroadcast ? "a broadcast" : "an allGather",
                               roundType_ == wire::Type::kBroadcast ? "broadcast" : "allGather"));
  }
  for (const ConnPtr& other : ranks_) {
    if (other->saidGoodbye) {
      return failAll(
          Code::kInvalidUsage, other->rank,
          fmt::format("bootstrap: allGather started after rank {} finalized", other->rank));
    }
  }
  round_[c->rank] = std::move(c->inBody);
  readFrame(c);
  if (++gathered_ == nranks_) completeRound();
}

void RootService::Impl::completeRound() {
  if (roundType_ == wire::Type::kBroadcast) {  // rank 0's block to every rank, once each
    auto result = std::make_shared<std::vector<std::byte>>(std::move(*round_[0]));
    for (auto& block : round_) block.reset();
    gathered_ = 0;
    for (const ConnPtr& c : ranks_) send(c, {.type = wire::Type::kResult, .rank = c->rank}, result);
    return;
  }
  size_t size = round_[0]->size();
  for (int r = 1; r < nranks_; ++r) {
    if (round_[r]->size() != size) {
      return failAll(Code::kInvalidUsage, r,
                     fmt::format("bootstrap: allGather sizes differ: rank 0 sent {} bytes, "
                                 "rank {} sent {}",
                                 size, r, round_[r]->size()));
    }
  }
  auto result = std::make_shared<std::vector<std::byte>>();
  result->reserve(size * nranks_);
  for (auto& block : round_) {
    result->insert(result->end(), block->begin(), block->end());
    block.reset();
  }
  gathered_ = 0;
  for (const ConnPtr& c : ranks_) send(c, {.type = wire::Type::kResult, .rank = c->rank}, result);
}

void RootService::Impl::onGoodbye(const ConnPtr& c) {
  if (phase_ == Phase::kInit) return onLost(c, "said goodbye before init completed");
  c->saidGoodbye = true;
  closeConn(c);
  if (gathered_ > 0 && phase_ == Phase::kServing) {
    return failAll(Code::kInvalidUsage, c->rank,
                   fmt::format("bootstrap: rank {} finalized during an allGather", c->rank));
  }
  if (++finished_ == nranks_) finish();
}

}  // namespace trnccl::bootstrap
