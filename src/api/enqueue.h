// The front door's shared path: validate the common arguments, plan, enqueue on the stream.
#pragma once

#include <memory>
#include <optional>

#include "algorithms/algorithm.h"
#include "api/handle.h"
#include "comm/check.h"
#include "schedule/schedule.h"

namespace trnccl::api {

// Checks datatype, op (when `reduces`), the byte size of `count` elements and that non-empty
// buffers are not NULL; `what` names the call in messages. Arguments that are plainly fine
// pass inline; the others go to checkArgsOrWhy, which finds the reason (or lets them pass).
Status checkArgsOrWhy(const char* what, const void* send, const void* recv, size_t count,
                      trncclDataType_t type, trncclRedOp_t op, bool reduces);
inline Status checkArgs(const char* what, const void* send, const void* recv, size_t count,
                        trncclDataType_t type, trncclRedOp_t op, bool reduces) {
  // 2^56 elements of at most 8 bytes stay far below SIZE_MAX / 2 bytes.
  constexpr size_t kPlainlyAddressable = size_t{1} << 56;
  if (static_cast<unsigned>(type) < static_cast<unsigned>(trncclNumTypes) &&
      (!reduces || static_cast<int>(op) >= 0) && count < kPlainlyAddressable &&
      ((send != nullptr && recv != nullptr) || count == 0)) {
    return Status::ok();
  }
  return checkArgsOrWhy(what, send, recv, count, type, op, reduces);
}

// Plans the call and enqueues its schedule on `stream` (NULL: the communicator's device's
// default stream); inside a group, records it for trncclGroupEnd instead. Returns once
// enqueued. With `premul` (a trncclRedOpCreatePreMulSum operator; args.op is then kSum) the
// send buffer is first multiplied into scratch, which the collective then reads.
trncclResult_t enqueue(const char* what, trncclComm_t comm, const algorithms::CollArgs& args,
                       trnrtStream_t stream, const std::optional<PreMul>& premul = std::nullopt);

// Enqueues a built schedule as one task of `comm` (no group handling).
// With `check` (TRNCCL_CHECK), ranks first compare fingerprints (comm/check.h). `keep` lives
// until the task is over (memory the schedule reads).
Status enqueueSchedule(comm::Communicator& comm, schedule::Schedule s, trnrtStream_t stream,
                       const std::string& what, bool collective,
                       std::optional<comm::check::Fingerprint> check = std::nullopt,
                       std::shared_ptr<void> keep = nullptr);
// Plans and enqueues a collective now (no group handling).
Status enqueueNow(const char* what, comm::Communicator& comm, const algorithms::CollArgs& call,
                  trnrtStream_t stream, const std::optional<PreMul>& premul = std::nullopt);

}  // namespace trnccl::api
