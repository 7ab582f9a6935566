// The collectives' front door: validate, then hand a CollArgs to the planner (enqueue.cc).
#include "api/enqueue.h"

using trnccl::Status;
using trnccl::algorithms::CollArgs;
using trnccl::algorithms::Collective;
using trnccl::api::checkArgs;
using trnccl::api::fail;

namespace {

trnccl::device::DataType dt(trncclDataType_t t) { return static_cast<trnccl::device::DataType>(t); }
trnccl::device::RedOp rop(trncclRedOp_t o) { return static_cast<trnccl::device::RedOp>(o); }

}  // namespace

extern "C" {

trncclResult_t trncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               trncclDataType_t datatype, trncclRedOp_t op, trncclComm_t comm,
                               trnrtStream_t stream) {
  if (Status s = checkArgs("trncclAllReduce", sendbuff, recvbuff, count, datatype, op, true); !s) {
    return fail(s);
  }
  CollArgs a{.coll = Collective::kAllReduce, .send = sendbuff, .recv = recvbuff, .count = count,
             .type = dt(datatype), .op = rop(op)};
  return trnccl::api::enqueue("allreduce", comm, a, stream);
}

}  // extern "C"
