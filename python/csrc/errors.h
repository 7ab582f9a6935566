// Errors of the C API become Python RuntimeErrors whose text is trnccl's own message.
#pragma once

#include <string>

#include "trnccl/trnccl.h"

namespace torch_trnccl {

// Throws std::runtime_error "trnccl: <what>: <result name>: <trncclGetLastError(comm)>" unless
// result is trncclSuccess. pybind11 and c10d turn it into a Python RuntimeError.
void check(trncclResult_t result, trncclComm_t comm, const std::string& what);
// The same for the runtime: "trnccl: <what>: <error string>: <trnrtGetLastErrorMessage()>".
void checkRt(trnrtError_t error, const std::string& what);
// Throws std::runtime_error "trnccl: <message>".
[[noreturn]] void fail(const std::string& message);

// Why work on comm's stream failed, for a stream callback told `status`: the communicator's
// error (trncclGetLastError) when it has one, else the stream's (trnrtGetLastErrorMessage).
std::string streamFailure(trncclComm_t comm, trnrtError_t status);

}  // namespace torch_trnccl
