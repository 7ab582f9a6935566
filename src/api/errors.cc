#include <string>

#include "api/handle.h"
#include "common/log.h"

namespace trnccl::api {
namespace {
thread_local std::string tlsLastError;
}

trncclResult_t toResult(Code code) { return static_cast<trncclResult_t>(code); }

trncclResult_t fail(const Status& status) {
  tlsLastError = status.message();
  TRN_WARN(kInit, "{}", status.message());
  if (inGroup()) recordGroupError(status);
  return toResult(status.code());
}

Result<comm::Communicator*> initialised(trncclComm_t comm) {
  if (comm == nullptr) return invalidArgument("comm is NULL");
  if (comm->initializing.load()) {
    return Status(Code::kInvalidUsage,
                  "communicator is still initializing: poll trncclCommGetAsyncError until it is "
                  "no longer trncclInProgress");
  }
  if (!comm->impl) return Status(Code::kInvalidUsage, "communicator failed to initialize");
  return comm->impl.get();
}

Result<comm::Communicator*> usableOrWhy(trncclComm_t comm) {
  auto c = initialised(comm);
  if (!c) return c.status();
  if (comm->finalized) return Status(Code::kInvalidUsage, "communicator was finalized");
  if ((*c)->revoked()) {
    return Status(Code::kInvalidUsage,
                  "communicator was revoked (trncclCommRevoke, or trncclCommShrink with "
                  "TRNCCL_SHRINK_ABORT): it takes no more work; shrink, destroy or abort it");
  }
  return c;
}

}  // namespace trnccl::api

extern "C" {

const char* trncclGetErrorString(trncclResult_t result) {
  switch (result) {
    case trncclSuccess:
      return "no error";
    case trncclUnhandledDeviceError:
      return "unhandled device error";
    case trncclSystemError:
      return "unhandled system error (socket, shared memory, ...)";
    case trncclInternalError:
      return "internal error - please report this issue";
    case trncclInvalidArgument:
      return "invalid argument";
    case trncclInvalidUsage:
      return "invalid usage";
    case trncclRemoteError:
      return "remote process exited or there was a network error";
    case trncclInProgress:
      return "operation in progress";
    case trncclTimeout:
      return "operation timed out";
    default:
      return "unknown result code";
  }
}

const char* trncclGetLastError(trncclComm_t comm) {
  using trnccl::api::tlsLastError;
  if (tlsLastError.empty() && comm != nullptr && comm->impl) {
    trnccl::Status async = comm->impl->asyncError();
    if (!async.isOk()) tlsLastError = async.message();
  }
  return tlsLastError.c_str();
}

}  // extern "C"
