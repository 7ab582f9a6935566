// Helpers shared by the C API files: the per-thread last error message and the mapping of
// internal Status to trnrtError_t.
#pragma once

#include <string>

#include "common/status.h"
#include "device/stream.h"
#include "trnccl/trnrt.h"

namespace trnccl::device {

// Records `message` as this thread's last error and returns `error`.
trnrtError_t fail(trnrtError_t error, std::string message);
// A stream's (or event's) failure becomes trnrtErrorLaunchFailure with the task's message.
trnrtError_t streamResult(const Status& status);
// getDevice()'s failure: an index out of range or an arena that could not be reserved.
trnrtError_t deviceError(const Status& status);
// resolveStream(), setting *error (and the message) when it fails.
Result<trnrtStream*> resolveOrFail(trnrtStream_t stream, trnrtError_t* error);

}  // namespace trnccl::device
