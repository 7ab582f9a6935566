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

// Broadcast, gather and scatter: data movement from or to a root. The buffer every rank uses
// is checked here (broadcast and scatter: recvbuff; gather: sendbuff); the one only the root
// uses, by enqueue once the root is known. NCCL users pass both everywhere.
trncclResult_t rootedMove(const char* what, Collective coll, const void* sendbuff, void* recvbuff,
                          size_t count, trncclDataType_t datatype, int root, trncclComm_t comm,
                          trnrtStream_t stream) {
  const void* everywhere = coll == Collective::kGather ? sendbuff : recvbuff;
  if (Status s = checkArgs(what, everywhere, everywhere, count, datatype, trncclSum, false); !s) {
    return fail(s);
  }
  CollArgs a{.coll = coll,
             .send = sendbuff,
             .recv = recvbuff,
             .count = count,
             .type = dt(datatype),
             .root = root};
  return trnccl::api::enqueue(trnccl::algorithms::collectiveName(coll), comm, a, stream);
}

}  // namespace

extern "C" {

trncclResult_t trncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               trncclDataType_t datatype, trncclRedOp_t op, trncclComm_t comm,
                               trnrtStream_t stream) {
  if (Status s = checkArgs("trncclAllReduce", sendbuff, recvbuff, count, datatype, op, true); !s) {
    return fail(s);
  }
  auto premul = trnccl::api::resolveOp("trncclAllReduce", comm, op, datatype);
  if (!premul) return fail(premul.status());
  CollArgs a{.coll = Collective::kAllReduce,
             .send = sendbuff,
             .recv = recvbuff,
             .count = count,
             .type = dt(datatype),
             .op = rop(*premul ? trncclSum : op)};
  return trnccl::api::enqueue("allreduce", comm, a, stream, *premul);
}

}  // extern "C"

extern "C" {

trncclResult_t trncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                               trncclDataType_t datatype, trncclComm_t comm, trnrtStream_t stream) {
  if (Status s =
          checkArgs("trncclAllGather", sendbuff, recvbuff, sendcount, datatype, trncclSum, false);
      !s) {
    return fail(s);
  }
  CollArgs a{.coll = Collective::kAllGather,
             .send = sendbuff,
             .recv = recvbuff,
             .count = sendcount,
             .type = dt(datatype)};
  return trnccl::api::enqueue("allgather", comm, a, stream);
}

trncclResult_t trncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                   trncclDataType_t datatype, trncclRedOp_t op, trncclComm_t comm,
                                   trnrtStream_t stream) {
  if (Status s =
          checkArgs("trncclReduceScatter", sendbuff, recvbuff, recvcount, datatype, op, true);
      !s) {
    return fail(s);
  }
  auto premul = trnccl::api::resolveOp("trncclReduceScatter", comm, op, datatype);
  if (!premul) return fail(premul.status());
  CollArgs a{.coll = Collective::kReduceScatter,
             .send = sendbuff,
             .recv = recvbuff,
             .count = recvcount,
             .type = dt(datatype),
             .op = rop(*premul ? trncclSum : op)};
  return trnccl::api::enqueue("reducescatter", comm, a, stream, *premul);
}

trncclResult_t trncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                               trncclDataType_t datatype, int root, trncclComm_t comm,
                               trnrtStream_t stream) {
  return rootedMove("trncclBroadcast", Collective::kBroadcast, sendbuff, recvbuff, count, datatype,
                    root, comm, stream);
}

trncclResult_t trncclBcast(void* buff, size_t count, trncclDataType_t datatype, int root,
                           trncclComm_t comm, trnrtStream_t stream) {
  return rootedMove("trncclBcast", Collective::kBroadcast, buff, buff, count, datatype, root, comm,
                    stream);
}

trncclResult_t trncclGather(const void* sendbuff, void* recvbuff, size_t count,
                            trncclDataType_t datatype, int root, trncclComm_t comm,
                            trnrtStream_t stream) {
  return rootedMove("trncclGather", Collective::kGather, sendbuff, recvbuff, count, datatype, root,
                    comm, stream);
}

trncclResult_t trncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                             trncclDataType_t datatype, int root, trncclComm_t comm,
                             trnrtStream_t stream) {
  return rootedMove("trncclScatter", Collective::kScatter, sendbuff, recvbuff, count, datatype,
                    root, comm, stream);
}

trncclResult_t trncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                            trncclDataType_t datatype, trncclRedOp_t op, int root,
                            trncclComm_t comm, trnrtStream_t stream) {
  // recvbuff matters only on the root (may be NULL elsewhere, as in NCCL).
  if (Status s = checkArgs("trncclReduce", sendbuff, sendbuff, count, datatype, op, true); !s) {
    return fail(s);
  }
  auto premul = trnccl::api::resolveOp("trncclReduce", comm, op, datatype);
  if (!premul) return fail(premul.status());
  CollArgs a{.coll = Collective::kReduce,
             .send = sendbuff,
             .recv = recvbuff,
             .count = count,
             .type = dt(datatype),
             .op = rop(*premul ? trncclSum : op),
             .root = root};
  return trnccl::api::enqueue("reduce", comm, a, stream, *premul);
}

trncclResult_t trncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                              trncclDataType_t datatype, trncclComm_t comm, trnrtStream_t stream) {
  if (Status s = checkArgs("trncclAlltoAll", sendbuff, recvbuff, count, datatype, trncclSum, false);
      !s) {
    return fail(s);
  }
  CollArgs a{.coll = Collective::kAlltoAll,
             .send = sendbuff,
             .recv = recvbuff,
             .count = count,
             .type = dt(datatype)};
  return trnccl::api::enqueue("alltoall", comm, a, stream);
}

}  // extern "C"
