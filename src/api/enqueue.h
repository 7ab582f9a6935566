// The front door's shared path: validate the common arguments, plan, enqueue on the stream.
#pragma once

#include "algorithms/algorithm.h"
#include "api/handle.h"

namespace trnccl::api {

// Checks datatype, op (when `reduces`), the byte size of `count` elements and that non-empty
// buffers are not NULL; `what` names the call in messages.
Status checkArgs(const char* what, const void* send, const void* recv, size_t count,
                 trncclDataType_t type, trncclRedOp_t op, bool reduces);

// Plans the call and enqueues its schedule on `stream` (NULL: the communicator's device's
// default stream). Returns once enqueued.
trncclResult_t enqueue(const char* what, trncclComm_t comm, algorithms::CollArgs args,
                       trnrtStream_t stream);

}  // namespace trnccl::api
