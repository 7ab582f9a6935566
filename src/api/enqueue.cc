#include "api/enqueue.h"

#include <cstdint>

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

Status enqueueSchedule(comm::Communicator& comm, schedule::Schedule s, trnrtStream_t stream,
                       const std::string& what, bool collective,
                       std::optional<comm::check::Fingerprint> check) {
  uint64_t seq = comm.beginTask(collective);
  std::string label = collective ? fmt::format("{} #{} ({})", what, seq, s.algorithm) : what;
  auto* c = &comm;
  auto task = [c, s = std::move(s), seq, label, check]() {
    Status st = check ? comm::check::verify(*c, *check, seq, label) : Status::ok();
    if (st) st = c->run(s, seq, label);
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

Status enqueueNow(const char* what, comm::Communicator& comm, algorithms::CollArgs args,
                  trnrtStream_t stream) {
  args.rank = comm.rank();
  args.nranks = comm.nranks();
  args.sliceBytes = comm.sliceBytes();
  args.shape = comm.topology().shape;
  args.deterministic = comm.config().deterministic;
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
  auto sched = plan::plan(args, comm.topology().links);
  if (!sched) return sched.status();
  comm.notePlanned(sched->algorithm);
  TRN_INFO(kColl, "rank {}: {} count {} {} send {} recv {} root {} stream {}", args.rank, what,
           args.count, device::dataTypeName(args.type), args.send, args.recv, args.root,
           static_cast<void*>(stream));
  std::optional<comm::check::Fingerprint> check;
  if (comm::check::enabled()) check = comm::check::make(args, sched->algorithm);
  return enqueueSchedule(comm, std::move(*sched), stream, what, true, check);
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
