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
    return invalidArgument("{}: invalid reduction op {} (valid: 0..{})", what,
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

trncclResult_t enqueue(const char* what, trncclComm_t handle, algorithms::CollArgs args,
                       trnrtStream_t stream) {
  auto usableComm = usable(handle);
  if (!usableComm) return fail(usableComm.status());
  comm::Communicator* comm = *usableComm;
  args.rank = comm->rank();
  args.nranks = comm->nranks();
  args.sliceBytes = comm->sliceBytes();
  auto sched = plan::plan(args);
  if (!sched) return fail(sched.status());

  uint64_t seq = comm->beginTask();
  std::string label = fmt::format("{} #{} ({}, {} x {})", what, seq, sched->algorithm, args.count,
                                  device::dataTypeName(args.type));
  TRN_INFO(kColl, "rank {}: {} send {} recv {} stream {}", args.rank, label, args.send, args.recv,
           static_cast<void*>(stream));
  auto task = [comm, s = std::move(*sched), seq, label]() {
    Status st = comm->run(s, seq, label);
    comm->endTask();
    return st;
  };
  // A NULL stream is the default stream of the communicator's device, whichever device the
  // calling thread has selected: one thread may drive communicators on several devices.
  int callerDevice = device::currentDevice();
  if (stream == nullptr) trnrtSetDevice(comm->device());
  Status st = device::enqueue(stream, std::move(task));
  if (stream == nullptr) trnrtSetDevice(callerDevice);
  if (!st) {
    comm->endTask();
    return fail(st);
  }
  return trncclSuccess;
}

}  // namespace trnccl::api
