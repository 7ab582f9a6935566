#include "comm/transport_set.h"

#include <algorithm>
#include <sstream>

#include "common/log.h"
#ifdef TRNCCL_HAVE_OFI
#include "transports/ofi/ofi_transport.h"
#endif
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"

namespace trnccl::comm {
namespace {

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// A transport by name ("shm", "tcp", "ofi"); nullptr for an unknown or unbuilt one.
std::unique_ptr<transport::Transport> makeTransport(const std::string& name) {
  if (name == "shm") return transport::makeShmTransport();
  if (name == "tcp") return transport::makeTcpTransport();
#ifdef TRNCCL_HAVE_OFI
  if (name == "ofi") return transport::makeOfiTransport();
#endif
  return nullptr;
}

}  // namespace

Result<std::unique_ptr<TransportSet>> TransportSet::connect(transport::SetupContext& ctx,
                                                            const std::string& order) {
  auto set = std::make_unique<TransportSet>();
  for (const std::string& name : splitList(order)) {
    if (auto t = makeTransport(name)) {
      set->transports_.push_back(std::move(t));
    } else {
      TRN_INFO(kInit, "transport '{}' is not available in this build; skipped", name);
    }
  }
  if (set->transports_.empty()) {
    return invalidArgument("no usable transport in '{}' (known: shm)", order);
  }
  const auto& self = ctx.peers[ctx.rank];
  std::vector<std::vector<int>> assigned(set->transports_.size());
  for (int peer = 0; peer < ctx.nranks; ++peer) {
    if (peer == ctx.rank) continue;
    auto it = std::find_if(set->transports_.begin(), set->transports_.end(),
                           [&](auto& t) { return t->canConnect(self, ctx.peers[peer]); });
    if (it == set->transports_.end()) {
      return invalidArgument(
          "no transport in '{}' can join rank {} (host {}) and rank {} (host {})", order, ctx.rank,
          self.hostname.data(), peer, ctx.peers[peer].hostname.data());
    }
    assigned[it - set->transports_.begin()].push_back(peer);
  }
  set->conns_.resize(ctx.nranks);
  for (size_t t = 0; t < set->transports_.size(); ++t) {
    auto conns = set->transports_[t]->connect(ctx, assigned[t]);
    if (!conns) return conns.status();
    for (size_t i = 0; i < assigned[t].size(); ++i) {
      TRN_INFO(kInit, "rank {} -> rank {} via {}", ctx.rank, assigned[t][i],
               set->transports_[t]->name());
      set->conns_[assigned[t][i]] = std::move((*conns)[i]);
    }
  }
  return set;
}

std::vector<transport::Connection*> TransportSet::connections() const {
  std::vector<transport::Connection*> out;
  for (auto& c : conns_) out.push_back(c.get());
  return out;
}

size_t TransportSet::minBufferBytes() const {
  size_t min = SIZE_MAX;
  for (auto& c : conns_) {
    if (c) min = std::min(min, c->bufferBytes());
  }
  return min == SIZE_MAX ? 0 : min;
}

}  // namespace trnccl::comm
