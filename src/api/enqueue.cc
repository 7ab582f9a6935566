#include "api/enqueue.h"

#include <cstdint>
#include <memory>

#include "common/log.h"
#include "device/device_api.h"
#include "plan/planner.h"

namespace trnccl::api {

Status checkArgs(const char* what, const void* send, const void* recv, size_t count,
                 trncclDataType_t type, trncclRedOp_t op, bool reduces) {
  if (static_cast<int>(type) < 0 || type >= trncclNumTypes) {
    return invalidArgument("{}: invalid datatype {} (valid: 0..{})", what, static_cast<int>(type),
                           trncclNumTypes - 1);
  }
  if (reduces && (static_cast<int>(op) < 0 || op >= trncclNumOps)) {
    return invalidArgument("{}: invalid reduction op {} (valid: 0..{})", what, static_cast<int>(op),
                           trncclNumOps - 1);
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

// Enqueues `plan` as one task of `comm`. The task's name is `what` (a literal) or, when set,
// `owned`; it is formatted only when a message needs it (schedule::CallName).
Status enqueuePlan(comm::Communicator& comm, std::shared_ptr<const schedule::Schedule> plan,
                   trnrtStream_t stream, const char* what, std::string owned, bool collective,
                   std::optional<comm::check::Fingerprint> check) {
  uint64_t seq = comm.beginTask(collective);
  auto* c = &comm;
  auto task = [c, plan = std::move(plan), seq, what, owned = std::move(owned), collective,
               check]() {
    schedule::CallName name(owned.empty() ? what : owned.c_str(),
                            collective ? plan->algorithm.c_str() : nullptr, seq);
    Status st = check ? comm::check::verify(*c, *check, seq, name.str()) : Status::ok();
    if (st) st = c->run(*plan, seq, name);
    c->endTask();
    return st;
  };
  // A NULL stream is the default stream of the communicator's device, whichever device the
  // calling thread has selected: one thread may drive communicators on several devices.
  int callerDevice = device::currentDevice();
  if (stream == nullptr) trnrtSetDevice(comm.device());
  // A task skipped because the stream already failed still ends: destroy waits for it.
  Status st = device::enqueue(stream, std::move(task), [c](const Status&) { c->endTask(); });
  if (stream == nullptr) trnrtSetDevice(callerDevice);
  if (!st) comm.endTask();
  return st;
}

}  // namespace

Status enqueueSchedule(comm::Communicator& comm, schedule::Schedule s, trnrtStream_t stream,
                       const std::string& what, bool collective,
                       std::optional<comm::check::Fingerprint> check) {
  return enqueuePlan(comm, std::make_shared<const schedule::Schedule>(std::move(s)), stream, "",
                     what, collective, check);
}

Status enqueueNow(const char* what, comm::Communicator& comm, algorithms::CollArgs args,
                  trnrtStream_t stream) {
  args.rank = comm.rank();
  args.nranks = comm.nranks();
  args.sliceBytes = comm.sliceBytes();
  args.shape = comm.topology().shape;
  using algorithms::Collective;
  const size_t elem = device::dataTypeSize(args.type);
  if ((args.coll == Collective::kAllGather || args.coll == Collective::kReduceScatter ||
       args.coll == Collective::kAlltoAll) &&
      args.count > SIZE_MAX / elem / static_cast<size_t>(args.nranks)) {
    return invalidArgument("{}: count {} x {} ranks overflows the addressable size", what,
                           args.count, args.nranks);
  }
  if (args.coll == Collective::kBroadcast || args.coll == Collective::kReduce) {
    if (args.root < 0 || args.root >= args.nranks) {
      return invalidArgument("{}: root {} not in [0, {})", what, args.root, args.nranks);
    }
    bool isRoot = args.rank == args.root;
    if (isRoot && args.count > 0 && args.coll == Collective::kBroadcast && args.send == nullptr) {
      return invalidArgument("{}: sendbuff is NULL on the root", what);
    }
    if (isRoot && args.count > 0 && args.coll == Collective::kReduce && args.recv == nullptr) {
      return invalidArgument("{}: recvbuff is NULL on the root", what);
    }
  }
  // A repeated call reuses its plan (comm/plan_cache.h): no tuning, no schedule to build.
  comm::PlanKey key = comm::PlanKey::of(args, stream);
  std::shared_ptr<const schedule::Schedule> sched = comm.planCache().find(key);
  if (sched == nullptr) {
    auto built = plan::plan(args, comm.topology().links);
    if (!built) return built.status();
    sched = comm.planCache().insert(std::move(key), std::move(*built));
  }
  comm.notePlanned(sched->algorithm);
  TRN_INFO(kColl, "rank {}: {} count {} {} send {} recv {} root {} stream {}", args.rank, what,
           args.count, device::dataTypeName(args.type), args.send, args.recv, args.root,
           static_cast<void*>(stream));
  std::optional<comm::check::Fingerprint> check;
  if (comm::check::enabled()) check = comm::check::make(args, sched->algorithm);
  return enqueuePlan(comm, std::move(sched), stream, what, {}, true, check);
}

trncclResult_t enqueue(const char* what, trncclComm_t handle, algorithms::CollArgs args,
                       trnrtStream_t stream) {
  if (inGroup()) {
    if (handle == nullptr) return fail(invalidArgument("{}: comm is NULL", what));
    recordCollective(what, handle, args, stream);
    return trncclSuccess;
  }
  auto comm = usable(handle);
  if (!comm) return fail(comm.status());
  Status st = enqueueNow(what, **comm, args, stream);
  return st ? trncclSuccess : fail(st);
}

}  // namespace trnccl::api
