// A rank's recovery port (recovery.h): listening from init, served only while this rank leads a
// shrink or drains what other ranks' probes left in its backlog. Single-threaded: the caller of
// lead() or drain() runs the port's io_context.
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <mutex>
#include <set>

#include "bootstrap/bootstrap_wire.h"
#include "bootstrap/recovery.h"
#include "bootstrap/socket.h"
#include "common/bytes.h"
#include "common/log.h"
#include "transports/net/listener.h"

namespace trnccl::bootstrap {
namespace {

namespace net = transport::net;
using ErrorCode = boost::system::error_code;

constexpr std::chrono::milliseconds kHandshake{5000};
constexpr std::chrono::milliseconds kAnswerTime{2000};
constexpr std::chrono::milliseconds kSlice{50};
constexpr int kMaxPending = 64;

std::string joined(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += fmt::format("{}{}", out.empty() ? "" : ",", r);
  return out;
}

// One connection of a round: its ask, once read.
struct Asker {
  std::shared_ptr<net::Incoming> in;
  wire::HeaderBytes header{};
  std::vector<std::byte> body;
  int rank = -1;
};
using AskerPtr = std::shared_ptr<Asker>;

// What the leader sends each asker: the id, or the error.
struct Answer {
  std::shared_ptr<wire::HeaderBytes> header;
  std::shared_ptr<std::vector<std::byte>> body;
};

Answer makeAnswer(const ShrinkAsk& mine, Result<UniqueId>& id) {
  wire::Header h{.idMagic = mine.parentMagic, .rank = mine.rank};
  auto body = std::make_shared<std::vector<std::byte>>();
  if (id) {
    h.type = wire::Type::kShrinkId;
    body->resize(128);
    id->encode(reinterpret_cast<char*>(body->data()));
  } else {
    const std::string text = id.status().message();
    h.type = wire::Type::kError;
    h.arg = static_cast<int32_t>(id.status().code());
    body->resize(std::min<size_t>(text.size(), wire::kMaxErrorBytes));
    std::memcpy(body->data(), text.data(), body->size());
  }
  h.length = body->size();
  return {std::make_shared<wire::HeaderBytes>(wire::encode(h)), body};
}

struct Round {
  ShrinkAsk mine;
  std::vector<int> expected;
  std::vector<AskerPtr> all;     // every connection accepted during the round
  std::vector<AskerPtr> askers;  // every ask read, answered at the end
  std::set<int> heard;
  Status verdict;     // the first problem; every asker gets it
  bool stop = false;  // the problem ends the wait (else all expected ranks are heard first)

  std::vector<int> notHeardFrom() const {
    std::vector<int> out;
    for (int r : expected) {
      if (heard.count(r) == 0) out.push_back(r);
    }
    return out;
  }
};
using RoundPtr = std::shared_ptr<Round>;

}  // namespace

struct RecoveryPort::Impl {
  explicit Impl(int rank)
      : listener(io, {.name = fmt::format("recovery: rank {}", rank),
                      .subsys = log::kBoot,
                      .handshake = kHandshake,
                      .maxPending = kMaxPending}) {}

  void onAccept(const std::shared_ptr<net::Incoming>& in);
  void onAsk(const AskerPtr& a, const RoundPtr& r);
  // Writes `answer` to `a`; `done` runs when written (or failed).
  void send(const AskerPtr& a, const Answer& answer, std::function<void()> done);
  void answer(Round& r, Result<UniqueId>& id);
  void runFor(std::chrono::milliseconds slice) {
    io.run_one_for(std::clamp(slice, std::chrono::milliseconds(1), kSlice));
  }

  asio::io_context io;  // declared first, destroyed last
  net::Listener listener;
  std::mutex mu;              // one lead() or drain() at a time
  RoundPtr round;             // while leading
  std::vector<Status> ended;  // how each earlier round ended, by attempt - 1
};

void RecoveryPort::Impl::onAccept(const std::shared_ptr<net::Incoming>& in) {
  RoundPtr r = round;
  if (!r) return in->close();  // a probe, or an early ask (which is repeated)
  auto a = std::make_shared<Asker>();
  a->in = in;
  r->all.push_back(a);
  asio::async_read(
      in->socket(), asio::buffer(a->header), [this, a, r](const ErrorCode& ec, size_t) {
        if (ec || !a->in->isOpen()) return a->in->close();
        wire::Header h = wire::decode(a->header);
        net::HeaderCheck check = wire::check(h, 4 * static_cast<uint64_t>(wire::kMaxRanks));
        if (!check.ok() || h.type != wire::Type::kShrinkAsk || h.idMagic != r->mine.parentMagic ||
            h.arg < 0 || h.length != 4 + 4 * static_cast<uint64_t>(h.arg)) {
          return listener.reject(
              *a->in, check.ok() ? "not a shrink ask for this communicator" : check.problem);
        }
        a->rank = h.rank;
        a->body.resize(h.length);
        asio::async_read(a->in->socket(), asio::buffer(a->body),
                         [this, a, r](const ErrorCode& e, size_t) {
                           if (e || !a->in->isOpen()) return a->in->close();
                           onAsk(a, r);
                         });
      });
}

void RecoveryPort::Impl::onAsk(const AskerPtr& a, const RoundPtr& r) {
  a->in->admit();
  uint32_t attempt = bytes::get<uint32_t>(&a->body[0]);
  if (attempt < r->mine.attempt) {
    // Still waiting for an earlier shrink this leader gave up on (it missed the answer): that
    // shrink failed; its caller then makes the attempt this round is for.
    Result<UniqueId> old(attempt >= 1 && attempt <= ended.size()
                             ? ended[attempt - 1]
                             : internalError("trncclCommShrink: an earlier shrink ended"));
    if (old)
      old = internalError("trncclCommShrink: rank {} asked again for a shrink that ended", a->rank);
    return send(a, makeAnswer(r->mine, old), [a] { a->in->close(); });
  }
  r->askers.push_back(a);
  std::vector<int> theirs(a->body.size() / 4 - 1);
  for (size_t i = 0; i < theirs.size(); ++i) {
    theirs[i] = static_cast<int>(bytes::get<uint32_t>(&a->body[4 + 4 * i]));
  }
  if (attempt > r->mine.attempt && r->verdict.isOk()) {
    r->verdict = makeError(Code::kInvalidUsage,
                           "trncclCommShrink: rank {} calls it for the {}th time on this "
                           "communicator, rank {} (which leads) for the {}th",
                           a->rank, attempt, r->mine.rank, r->mine.attempt);
  }
  bool expected = std::find(r->expected.begin(), r->expected.end(), a->rank) != r->expected.end();
  bool fresh = r->heard.insert(a->rank).second;
  if (!r->verdict.isOk()) return;
  if (theirs != r->mine.excluded) {
    r->verdict =
        Status(Code::kInvalidUsage,
               fmt::format("trncclCommShrink: the ranks disagree on excludeRanksList: "
                           "rank {} excludes [{}], rank {} (which leads the shrink) "
                           "excludes [{}]",
                           a->rank, joined(theirs), r->mine.rank, joined(r->mine.excluded)));
    return;
  }
  if (!expected || !fresh) {
    r->verdict = internalError("trncclCommShrink: rank {} asked twice, or is the leader", a->rank);
  }
}

void RecoveryPort::Impl::send(const AskerPtr& a, const Answer& answer, std::function<void()> done) {
  std::array<asio::const_buffer, 2> bufs{asio::buffer(*answer.header), asio::buffer(*answer.body)};
  asio::async_write(a->in->socket(), bufs,
                    [answer, done = std::move(done)](const ErrorCode&, size_t) { done(); });
}

// Answers every ask of the round alike, then closes every connection of the round.
void RecoveryPort::Impl::answer(Round& r, Result<UniqueId>& id) {
  Answer reply = makeAnswer(r.mine, id);
  int writing = 0;
  for (const AskerPtr& a : r.askers) {
    if (!a->in->isOpen()) continue;
    ++writing;
    send(a, reply, [&writing] { --writing; });
  }
  Deadline flush = Deadline::after(kAnswerTime);
  while (writing > 0 && !flush.expired()) {
    runFor(std::chrono::duration_cast<std::chrono::milliseconds>(flush.remaining()));
  }
  for (const AskerPtr& a : r.all) a->in->close();
  io.restart();
  io.poll();  // the handlers of what was just closed complete here, while `writing` lives
}

RecoveryPort::RecoveryPort(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RecoveryPort::~RecoveryPort() = default;

Result<std::unique_ptr<RecoveryPort>> RecoveryPort::open(int rank) {
  auto host = chooseBootstrapHost();
  if (!host) return host.status();
  ErrorCode ec;
  auto address = asio::ip::make_address(*host, ec);
  if (ec) return invalidArgument("recovery: address '{}' is not numeric", *host);
  auto impl = std::make_unique<Impl>(rank);
  TRN_TRY(impl->listener.listen(tcp::endpoint(address, 0)));
  Impl* raw = impl.get();
  impl->listener.start([raw](const std::shared_ptr<net::Incoming>& in) { raw->onAccept(in); });
  return std::unique_ptr<RecoveryPort>(new RecoveryPort(std::move(impl)));
}

RecoveryAddress RecoveryPort::address() const {
  tcp::endpoint at = impl_->listener.local();
  return {.host = at.address().to_string(), .port = at.port()};
}

void RecoveryPort::drain() {
  std::unique_lock<std::mutex> lock(impl_->mu, std::try_to_lock);
  if (!lock.owns_lock()) return;
  impl_->io.restart();
  impl_->io.poll();
}

Result<UniqueId> RecoveryPort::lead(const ShrinkAsk& mine, const std::vector<int>& expected,
                                    Deadline deadline, const CheckMissing& check,
                                    const std::function<Result<UniqueId>()>& makeId) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto r = std::make_shared<Round>();
  r->mine = mine;
  r->expected = expected;
  impl_->round = r;
  impl_->io.restart();
  Clock::time_point start = Clock::now();
  Clock::time_point nextCheck = start + kCheckEvery;
  // After a disagreement the leader still waits for every survivor, so that all get the same
  // answer at once (one that sees another leader is only answered by the deadline).
  while (!r->stop &&
         !std::includes(r->heard.begin(), r->heard.end(), r->expected.begin(), r->expected.end())) {
    if (deadline.expired()) {
      auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
      if (!r->verdict.isOk()) break;
      r->verdict = Status(Code::kTimeout,
                          fmt::format("trncclCommShrink: rank {} (which leads the shrink) waited "
                                      "{} ms for rank(s) {} to call trncclCommShrink too",
                                      mine.rank, waited.count(), joined(r->notHeardFrom())));
      break;
    }
    impl_->runFor(std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining()));
    if (Clock::now() >= nextCheck && check) {
      if (Status s = check(r->notHeardFrom()); !s) {
        if (r->verdict.isOk()) r->verdict = s;
        r->stop = true;
      }
      nextCheck = Clock::now() + kCheckEvery;
    }
  }
  impl_->round.reset();
  Result<UniqueId> id = r->verdict.isOk() ? makeId() : Result<UniqueId>(r->verdict);
  impl_->ended.resize(std::max<size_t>(impl_->ended.size(), mine.attempt));
  if (mine.attempt >= 1) impl_->ended[mine.attempt - 1] = id.status();
  impl_->answer(*r, id);
  return id;
}

}  // namespace trnccl::bootstrap
