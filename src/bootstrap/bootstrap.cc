// The rank side of the bootstrap: check in at the root, then relay allGather/barrier through it.
// Every wait is bounded (connect: the caller's deadline; later calls: the operation timeout)
// and a failed or timed-out exchange leaves the stream out of step, so the first error is
// kept and returned by every later call.
#include "bootstrap/bootstrap.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/address.hpp>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "bootstrap/bootstrap_wire.h"
#include "bootstrap/socket.h"
#include "bootstrap/tiers.h"
#include "common/env.h"
#include "common/log.h"
#include "transports/net/address.h"

namespace trnccl::bootstrap {
namespace {

constexpr std::chrono::milliseconds kDefaultTimeout{120000};
constexpr std::chrono::milliseconds kGoodbyeTimeout{1000};

}  // namespace

struct Bootstrap::Impl {
  TimedSocket socket;
  int rank = 0;
  int nranks = 0;
  uint64_t magic = 0;
  std::string root;
  std::vector<std::vector<std::byte>> infos;
  std::chrono::milliseconds timeout{kDefaultTimeout};
  bool ready = false;  // checked in and got the table
  Status broken;       // the first fatal error
  std::mutex opMu;     // held by exchanges; checkRoot() only peeks when it is free

  OpContext op(Deadline deadline, std::string what) const {
    return {deadline, Clock::now(),
            fmt::format("{} (rank {} of {}, root {})", what, rank, nranks, root)};
  }
  Status fail(Status s) {
    if (broken.isOk()) broken = s;
    return s;
  }
  // A frame with `arg` nranks, or the given one (a revoke's Code).
  Status send(wire::Type type, std::span<const std::byte> body, const OpContext& op);
  Status send(wire::Type type, int32_t arg, std::span<const std::byte> body, const OpContext& op);
  Result<wire::Header> receive(wire::Type expected, uint64_t maxLength, const OpContext& op);
  Status receiveTable(const OpContext& op);
  // One round relayed by the root: kGather (every rank's block, each of mine's size) or
  // kBroadcast (rank 0's block, of any size up to kMaxGatherBytes).
  Result<std::vector<std::byte>> exchange(wire::Type type, std::span<const std::byte> mine);
};

Status Bootstrap::Impl::send(wire::Type type, std::span<const std::byte> body,
                             const OpContext& op) {
  return send(type, nranks, body, op);
}

Status Bootstrap::Impl::send(wire::Type type, int32_t arg, std::span<const std::byte> body,
                             const OpContext& op) {
  wire::Header h{.type = type, .idMagic = magic, .rank = rank, .arg = arg, .length = body.size()};
  wire::HeaderBytes bytes = wire::encode(h);
  return socket.write(bytes.data(), bytes.size(), body.data(), body.size(), op);
}

// Reads the next frame's header; an error frame from the root becomes its Status.
Result<wire::Header> Bootstrap::Impl::receive(wire::Type expected, uint64_t maxLength,
                                              const OpContext& op) {
  wire::HeaderBytes bytes;
  TRN_TRY(socket.read(bytes.data(), bytes.size(), op));
  wire::Header h = wire::decode(bytes);
  bool error = h.type == wire::Type::kError;
  transport::net::HeaderCheck check = wire::check(h, error ? wire::kMaxErrorBytes : maxLength);
  if (!check.ok()) {
    return Status(Code::kRemoteError,
                  fmt::format("bootstrap: the root sent a malformed frame ({}) while {}",
                              check.problem, op.what));
  }
  if (error) {
    std::string text(h.length, '\0');
    TRN_TRY(socket.read(text.data(), text.size(), op));
    return Status(wire::codeFromWire(h.arg), text, h.rank);
  }
  if (h.type != expected) {
    return Status(Code::kRemoteError,
                  fmt::format("bootstrap: unexpected frame (type {}, {} bytes) from the root "
                              "while {}",
                              static_cast<int>(h.type), h.length, op.what));
  }
  return h;
}

Status Bootstrap::Impl::receiveTable(const OpContext& op) {
  uint64_t header = 8 * static_cast<uint64_t>(nranks);
  auto h = receive(wire::Type::kTable, header + nranks * wire::kMaxInfoBytes, op);
  if (!h) return h.status();
  std::vector<std::byte> table(h->length);
  TRN_TRY(socket.read(table.data(), table.size(), op));
  if (!wire::parseTable(table.data(), table.size(), nranks, infos)) {
    return Status(Code::kRemoteError, "bootstrap: malformed rank table from the root");
  }
  return Status::ok();
}

Result<std::unique_ptr<Bootstrap>> Bootstrap::connect(const UniqueId& id, int rank, int nranks,
                                                      std::span<const std::byte> info,
                                                      Deadline deadline) {
  if (nranks < 1 || nranks > wire::kMaxRanks || rank < 0 || rank >= nranks) {
    return invalidArgument("bootstrap: rank {} / nranks {} out of range", rank, nranks);
  }
  if (info.size() > wire::kMaxInfoBytes) {
    return invalidArgument("bootstrap: info of {} bytes exceeds {}", info.size(),
                           wire::kMaxInfoBytes);
  }
  boost::system::error_code ec;
  auto address = asio::ip::make_address(id.host, ec);
  if (ec || id.port == 0) {
    return invalidArgument("bootstrap: unique id has no valid root address ('{}', port {})",
                           id.host, id.port);
  }
  auto impl = std::make_unique<Impl>();
  impl->rank = rank;
  impl->nranks = nranks;
  impl->magic = id.magic;
  impl->root = transport::net::nameOf({address, id.port});
  if (!id.interface.empty()) impl->root += fmt::format(" (interface {} of its host)", id.interface);
  impl->timeout =
      std::chrono::milliseconds(env::getInt("TRNCCL_TIMEOUT_MS", kDefaultTimeout.count()));
  TRN_TRY(impl->socket.connect(tcp::endpoint(address, id.port),
                               impl->op(deadline, "connecting to the bootstrap root")));
  TRN_TRY(impl->send(wire::Type::kHello, info, impl->op(deadline, "sending hello")));
  TRN_TRY(impl->receiveTable(impl->op(deadline, "waiting for the rank table from the root")));
  impl->ready = true;
  TRN_INFO(kBoot, "bootstrap: rank {} of {} init complete (root {})", rank, nranks, impl->root);
  return std::unique_ptr<Bootstrap>(new Bootstrap(std::move(impl)));
}

Bootstrap::Bootstrap(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Bootstrap::Bootstrap(std::unique_ptr<Tiers> tiers) : tiers_(std::move(tiers)) {}

Bootstrap::~Bootstrap() {
  if (tiers_) return;  // its sessions say goodbye themselves
  // Tell the root this rank is done, so it does not report it as disconnected; bounded.
  if (!impl_->ready || !impl_->broken.isOk() || impl_->socket.aborted()) return;
  Status s = impl_->send(wire::Type::kGoodbye, {},
                         impl_->op(Deadline::after(kGoodbyeTimeout), "saying goodbye"));
  if (!s) TRN_INFO(kBoot, "{}", s.message());
}

int Bootstrap::rank() const { return tiers_ ? tiers_->rank : impl_->rank; }
int Bootstrap::nranks() const { return tiers_ ? tiers_->nranks : impl_->nranks; }
int Bootstrap::group() const { return tiers_ ? tiers_->group : -1; }
bool Bootstrap::leader() const { return tiers_ && tiers_->leader(); }
const std::vector<std::vector<std::byte>>& Bootstrap::infos() const {
  return tiers_ ? tiers_->infos : impl_->infos;
}

Result<std::vector<std::byte>> Bootstrap::allGather(std::span<const std::byte> mine) {
  if (tiers_) return tiers_->allGather(mine);
  return impl_->exchange(wire::Type::kGather, mine);
}

Result<std::vector<std::byte>> Bootstrap::broadcastFromFirst(std::span<const std::byte> mine) {
  return impl_->exchange(wire::Type::kBroadcast, mine);
}

Result<std::vector<std::byte>> Bootstrap::Impl::exchange(wire::Type type,
                                                         std::span<const std::byte> mine) {
  std::lock_guard<std::mutex> lock(opMu);
  if (socket.aborted()) return Status(Code::kInvalidUsage, "bootstrap: used after abort()");
  if (!broken.isOk()) return broken;
  if (mine.size() > wire::kMaxGatherBytes) {
    return invalidArgument("bootstrap: allGather of {} bytes exceeds {}", mine.size(),
                           wire::kMaxGatherBytes);
  }
  const bool gather = type == wire::Type::kGather;
  OpContext ctx = op(
      Deadline::after(timeout),
      fmt::format("waiting for {} of {} bytes", gather ? "allGather" : "a broadcast", mine.size()));
  Status sent = send(type, mine, ctx);
  if (!sent) return fail(sent);
  const uint64_t total =
      gather ? mine.size() * static_cast<uint64_t>(nranks) : wire::kMaxGatherBytes;
  auto h = receive(wire::Type::kResult, total, ctx);
  if (!h) return fail(h.status());
  if (gather && h->length != total) {
    return fail(Status(
        Code::kRemoteError,
        fmt::format("bootstrap: allGather result of {} bytes, expected {}", h->length, total)));
  }
  std::vector<std::byte> result(h->length);
  Status got = socket.read(result.data(), result.size(), ctx);
  if (!got) return fail(got);
  return result;
}

Status Bootstrap::barrier() { return tiers_ ? tiers_->barrier() : allGather({}).status(); }

void Bootstrap::setTimeout(std::chrono::milliseconds timeout) {
  if (!tiers_) {
    impl_->timeout = timeout;
    return;
  }
  tiers_->local->setTimeout(timeout);
  if (tiers_->top) tiers_->top->setTimeout(timeout);
}

Status Bootstrap::checkRoot(bool rootExitFails) {
  if (tiers_) return tiers_->checkRoot(rootExitFails);
  std::unique_lock<std::mutex> lock(impl_->opMu, std::try_to_lock);
  if (!lock.owns_lock()) return Status::ok();  // an exchange runs: it reports failures itself
  if (!impl_->broken.isOk()) return impl_->broken;
  int fd = impl_->socket.fd();
  if (fd < 0 || impl_->socket.aborted()) return Status::ok();  // abort is reported elsewhere
  std::array<std::byte, wire::kHeaderBytes + wire::kMaxErrorBytes> buf;
  ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::ok();
    return impl_->fail(
        Status(Code::kRemoteError, fmt::format("bootstrap: connection to the root {} failed: {}",
                                               impl_->root, std::strerror(errno))));
  }
  if (n == 0) {
    if (!rootExitFails) return Status::ok();
    return impl_->fail(
        Status(Code::kRemoteError, fmt::format("bootstrap: the root {} closed the connection (the "
                                               "process hosting it, usually rank 0's, exited)",
                                               impl_->root)));
  }
  if (static_cast<size_t>(n) < wire::kHeaderBytes) return Status::ok();  // rest in flight
  wire::HeaderBytes bytes;
  std::memcpy(bytes.data(), buf.data(), bytes.size());
  wire::Header h = wire::decode(bytes);
  if (h.type != wire::Type::kError || !wire::check(h, wire::kMaxErrorBytes).ok()) {
    return Status::ok();
  }
  size_t text = std::min<size_t>(h.length, n - wire::kHeaderBytes);
  std::string message(reinterpret_cast<const char*>(buf.data() + wire::kHeaderBytes), text);
  return impl_->fail(Status(wire::codeFromWire(h.arg), message, h.rank));
}

void Bootstrap::abort() {
  if (!tiers_) return impl_->socket.abort();
  tiers_->local->abort();
  if (tiers_->top) tiers_->top->abort();
}

void Bootstrap::revoke() {
  if (tiers_) return tiers_->revoke();
  revokeWith(Status::ok());
}

void Bootstrap::revokeWith(const Status& why) {
  std::unique_lock<std::mutex> lock(impl_->opMu, std::try_to_lock);
  if (lock.owns_lock() && impl_->ready && impl_->broken.isOk() && !impl_->socket.aborted()) {
    const std::string& text = why.message();
    const size_t n = why.isOk() ? 0 : std::min<size_t>(text.size(), wire::kMaxErrorBytes);
    Status s = impl_->send(wire::Type::kRevoke, static_cast<int32_t>(why.code()),
                           std::as_bytes(std::span(text.data(), n)),
                           impl_->op(Deadline::after(kGoodbyeTimeout), "revoking"));
    if (!s) TRN_INFO(kBoot, "{}", s.message());
  }
  impl_->socket.abort();
}

}  // namespace trnccl::bootstrap
