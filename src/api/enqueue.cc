#include "api/enqueue.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/log.h"
#include "device/device_api.h"
#include "plan/planner.h"

namespace trnccl::api {

Status checkArgsOrWhy(const char* what, const void* send, const void* recv, size_t count,
                      trncclDataType_t type, trncclRedOp_t op, bool reduces) {
  if (static_cast<int>(type) < 0 || type >= trncclNumTypes) {
    return invalidArgument("{}: invalid datatype {} (valid: 0..{})", what, static_cast<int>(type),
                           trncclNumTypes - 1);
  }
  // Ops from trncclNumOps on may be handles of trncclRedOpCreatePreMulSum (resolveOp).
  if (reduces && static_cast<int>(op) < 0) {
    return invalidArgument("{}: invalid reduction op {} (valid: 0..{}, or a handle)", what,
                           static_cast<int>(op), trncclNumOps - 1);
  }
  size_t elem = device::dataTypeSize(static_cast<device::DataType>(type));
  if (count > SIZE_MAX / elem / 2) {
    return invalidArgument("{}: count {} of {} overflows the addressable size", what, count,
                           device::dataTypeName(static_cast<device::DataType>(type)));
  }
  if (count > 0 && (send == nullptr || recv == nullptr)) {
    return invalidArgument("{}: {} is NULL with count {}", what,
                           send == nullptr ? "sendbuff" : "recvbuff", count);
  }
  return Status::ok();
}

namespace {

// Runs `fn` with the communicator's device selected when `stream` is NULL: a NULL stream is the
// default stream of the communicator's device, whichever device the calling thread has
// selected (one thread may drive communicators on several devices). A stream given names its
// device: nothing to select (no thread-local read per call).
template <typename Fn>
auto onCommDevice(const comm::Communicator& comm, trnrtStream_t stream, Fn fn) {
  if (stream != nullptr) return fn();
  const int callerDevice = device::currentDevice();
  trnrtSetDevice(comm.device());
  auto result = fn();
  trnrtSetDevice(callerDevice);
  return result;
}

// Enqueues the multiplication of the send buffer by the operator's scalar into device memory
// of the communicator's device, and points args.send at it (the collective then sums).
Result<std::shared_ptr<void>> enqueuePreMul(comm::Communicator& comm, algorithms::CollArgs& args,
                                            const PreMul& premul, trnrtStream_t stream) {
  using algorithms::Collective;
  const size_t count = args.coll == Collective::kReduceScatter
                           ? args.count * static_cast<size_t>(args.nranks)
                           : args.count;
  if (count == 0) return std::shared_ptr<void>();
  const size_t bytes = count * device::dataTypeSize(args.type);
  void* raw = nullptr;
  const int callerDevice = device::currentDevice();
  trnrtSetDevice(comm.device());
  const trnrtError_t e = trnrtMalloc(&raw, bytes);
  trnrtSetDevice(callerDevice);
  if (e != trnrtSuccess) {
    return Status(Code::kSystemError, fmt::format("pre-multiplied copy of {} bytes: {}", bytes,
                                                  trnrtGetLastErrorMessage()));
  }
  std::shared_ptr<void> scaled(raw, [](void* p) { trnrtFree(p); });
  auto task = [scaled, send = args.send, count, premul]() {
    device::scale(premul.type, scaled.get(), send, count, premul.scalar());
    return Status::ok();
  };
  TRN_TRY(onCommDevice(comm, stream, [&] { return device::enqueue(stream, std::move(task)); }));
  args.send = scaled.get();
  return scaled;
}

// What few calls add to a task: the name of a group's point-to-point schedule, the check
// mode's fingerprint, memory the schedule reads. Allocated only when one of them is present,
// so that a plain collective's task fits the stream's slot (device::kTaskBytes) and its
// enqueue allocates nothing.
struct TaskExtras {
  std::string owned;
  std::optional<comm::check::Fingerprint> check;
  std::shared_ptr<void> keep;
};

// Enqueues `plan` as one task of `comm`. The task's name is `what` (a literal) or, when set,
// extras->owned; it is formatted only when a message needs it (schedule::CallName). The
// extras live as long as the task. A plain collective passes none: nothing is built, copied or
// destroyed for them per call.
Status enqueuePlan(comm::Communicator& comm, std::shared_ptr<const schedule::Schedule>&& plan,
                   trnrtStream_t stream, const char* what, bool collective,
                   std::unique_ptr<TaskExtras> extras) {
  uint64_t seq = comm.beginTask(collective);
  auto* c = &comm;
  auto task = [c, plan = std::move(plan), seq, what, collective, extras = std::move(extras)]() {
    const bool named = extras && !extras->owned.empty();
    schedule::CallName name(named ? extras->owned.c_str() : what,
                            collective ? plan->algorithm.c_str() : nullptr, seq);
    Status st = extras && extras->check ? comm::check::verify(*c, *extras->check, seq, name.str())
                                        : Status::ok();
    if (st) st = c->run(*plan, seq, name);
    c->endTask();
    return st;
  };
  // A task skipped because the stream already failed still ends: destroy waits for it.
  auto onSkip = [c](const Status&) { c->endTask(); };
  // A stream given: the task is built in its ring slot (no Task moved through enqueue), and
  // nothing is selected or resolved.
  if (stream != nullptr) {
    device::enqueueInPlace(stream, std::move(task), std::move(onSkip));
    return Status::ok();
  }
  Status st = onCommDevice(
      comm, stream, [&] { return device::enqueue(stream, std::move(task), std::move(onSkip)); });
  if (!st) comm.endTask();
  return st;
}

// The extras of a task, or none when there are none.
std::unique_ptr<TaskExtras> extrasOf(std::string owned,
                                     std::optional<comm::check::Fingerprint> check,
                                     std::shared_ptr<void> keep) {
  if (owned.empty() && !check && !keep) return nullptr;
  return std::unique_ptr<TaskExtras>(new TaskExtras{std::move(owned), check, std::move(keep)});
}

// What a call that is not a plain repeated one needs besides its key: its arguments completed
// with the communicator's, the pre-multiplied operand (enqueued first), the plan (cached
// unless pre-multiplied: its operand is a new buffer every call), the check mode's fingerprint.
// `searched`: the cache was already asked for `key` (and missed; each find counts).
Status planCall(comm::Communicator& comm, const algorithms::CollArgs& call, trnrtStream_t stream,
                const std::optional<PreMul>& premul, bool searched, comm::PlanKey key,
                std::shared_ptr<const schedule::Schedule>& sched,
                std::unique_ptr<TaskExtras>& extras) {
  algorithms::CollArgs args = call;
  args.rank = comm.rank();
  args.nranks = comm.nranks();
  args.sliceBytes = comm.sliceBytes();
  args.deterministic = comm.config().deterministic;
  std::shared_ptr<void> scaled;
  if (premul) {
    auto made = enqueuePreMul(comm, args, *premul, stream);
    if (!made) return made.status();
    scaled = std::move(*made);
  } else if (!searched) {
    sched = comm.planCache().find(key);
  }
  if (sched == nullptr) {
    args.shape = comm.topology().shape;  // only the tuner reads it (a shared_ptr: 2 atomics)
    auto built = plan::plan(args, comm.topology().links, comm.config().tuning);
    if (!built) return built.status();
    sched = premul ? std::make_shared<const schedule::Schedule>(std::move(*built))
                   : comm.planCache().insert(std::move(key), std::move(*built));
  }
  if (comm.config().check || scaled) {
    std::optional<comm::check::Fingerprint> check;
    if (comm.config().check) check = comm::check::make(args, sched->algorithm);
    extras = extrasOf({}, check, std::move(scaled));
  }
  return Status::ok();
}

}  // namespace

Status enqueueSchedule(comm::Communicator& comm, schedule::Schedule s, trnrtStream_t stream,
                       const std::string& what, bool collective,
                       std::optional<comm::check::Fingerprint> check, std::shared_ptr<void> keep) {
  return enqueuePlan(comm, std::make_shared<const schedule::Schedule>(std::move(s)), stream, "",
                     collective, extrasOf(what, check, std::move(keep)));
}

Status enqueueNow(const char* what, comm::Communicator& comm, const algorithms::CollArgs& call,
                  trnrtStream_t stream, const std::optional<PreMul>& premul) {
  const int rank = comm.rank();
  const int nranks = comm.nranks();
  using algorithms::Collective;
  const size_t elem = device::dataTypeSize(call.type);
  if ((call.coll == Collective::kAllGather || call.coll == Collective::kReduceScatter ||
       call.coll == Collective::kAlltoAll || call.coll == Collective::kGather ||
       call.coll == Collective::kScatter) &&
      call.count > SIZE_MAX / elem / static_cast<size_t>(nranks)) {
    return invalidArgument("{}: count {} x {} ranks overflows the addressable size", what,
                           call.count, nranks);
  }
  if (algorithms::rooted(call.coll)) {
    if (call.root < 0 || call.root >= nranks) {
      return invalidArgument("{}: root {} not in [0, {})", what, call.root, nranks);
    }
    // The buffers the API checked everywhere are the others; these matter on the root only.
    const bool rootSends = call.coll == Collective::kBroadcast || call.coll == Collective::kScatter;
    if (rank == call.root && call.count > 0 &&
        (rootSends ? call.send == nullptr : call.recv == nullptr)) {
      return invalidArgument("{}: {} is NULL on the root", what,
                             rootSends ? "sendbuff" : "recvbuff");
    }
  }
  // A plain repeated call finds its plan by its key and copies nothing (issue 14); planning, the
  // check mode and PreMulSum read the arguments completed with the communicator's (planCall).
  std::shared_ptr<const schedule::Schedule> sched;
  std::unique_ptr<TaskExtras> extras;
  comm::PlanKey key = comm::PlanKey::of(call, stream);
  key.deterministic = comm.config().deterministic;
  const bool plain = !premul && !comm.config().check;
  if (plain) sched = comm.planCache().find(key);
  if (sched == nullptr) {
    TRN_TRY(planCall(comm, call, stream, premul, plain, std::move(key), sched, extras));
  }
  comm.notePlanned(sched->algorithm);
  TRN_INFO(kColl, "rank {}: {} count {} {} send {} recv {} root {} stream {}", rank, what,
           call.count, device::dataTypeName(call.type), call.send, call.recv, call.root,
           static_cast<void*>(stream));
  return enqueuePlan(comm, std::move(sched), stream, what, true, std::move(extras));
}

trncclResult_t enqueue(const char* what, trncclComm_t handle, const algorithms::CollArgs& args,
                       trnrtStream_t stream, const std::optional<PreMul>& premul) {
  if (inGroup()) {
    if (handle == nullptr) return fail(invalidArgument("{}: comm is NULL", what));
    recordCollective(what, handle, args, stream, premul);
    return trncclSuccess;
  }
  auto comm = usable(handle);
  if (!comm) return fail(comm.status());
  Status st = enqueueNow(what, **comm, args, stream, premul);
  return st ? trncclSuccess : fail(st);
}

}  // namespace trnccl::api
