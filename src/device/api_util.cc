#include "device/api_util.h"

#include "common/log.h"
#include "device/device.h"

namespace trnccl::device {
namespace {

// Not cleared by successful calls: it is the last error, as its name says.
thread_local std::string tlsLastError;

}  // namespace

trnrtError_t fail(trnrtError_t error, std::string message) {
  TRN_INFO(kDevice, "{}: {}", trnrtGetErrorString(error), message);
  tlsLastError = std::move(message);
  return error;
}

trnrtError_t streamResult(const Status& status) {
  return status.isOk() ? trnrtSuccess : fail(trnrtErrorLaunchFailure, status.message());
}

trnrtError_t deviceError(const Status& status) {
  return fail(status.code() == Code::kInvalidArgument ? trnrtErrorInvalidDevice
                                                      : trnrtErrorMemoryAllocation,
              status.message());
}

Result<trnrtStream*> resolveOrFail(trnrtStream_t stream, trnrtError_t* error) {
  Result<trnrtStream*> resolved = resolveStream(stream);
  if (!resolved) *error = deviceError(resolved.status());
  return resolved;
}

}  // namespace trnccl::device

extern "C" {

const char* trnrtGetErrorString(trnrtError_t error) {
  switch (error) {
    case trnrtSuccess:
      return "trnrtSuccess: no error";
    case trnrtErrorInvalidValue:
      return "trnrtErrorInvalidValue: invalid argument";
    case trnrtErrorMemoryAllocation:
      return "trnrtErrorMemoryAllocation: out of device memory";
    case trnrtErrorInvalidDevice:
      return "trnrtErrorInvalidDevice: invalid device ordinal";
    case trnrtErrorInvalidResourceHandle:
      return "trnrtErrorInvalidResourceHandle: invalid stream or event handle";
    case trnrtErrorNotReady:
      return "trnrtErrorNotReady: work not yet complete";
    case trnrtErrorLaunchFailure:
      return "trnrtErrorLaunchFailure: a task on the stream failed";
    case trnrtErrorTimeout:
      return "trnrtErrorTimeout: timed out";
    case trnrtErrorUnknown:
      return "trnrtErrorUnknown: unknown error";
  }
  return "unrecognized trnrtError_t value";
}

const char* trnrtGetLastErrorMessage(void) { return trnccl::device::tlsLastError.c_str(); }

}  // extern "C"
