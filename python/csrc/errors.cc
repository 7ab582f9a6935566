#include "errors.h"

#include <stdexcept>

namespace torch_trnccl {

void fail(const std::string& message) { throw std::runtime_error("trnccl: " + message); }

void check(trncclResult_t result, trncclComm_t comm, const std::string& what) {
  if (result == trncclSuccess) return;
  fail(what + ": " + trncclGetErrorString(result) + ": " + trncclGetLastError(comm));
}

void checkRt(trnrtError_t error, const std::string& what) {
  if (error == trnrtSuccess) return;
  fail(what + ": " + trnrtGetErrorString(error) + ": " + trnrtGetLastErrorMessage());
}

std::string streamFailure(trncclComm_t comm, trnrtError_t status) {
  std::string message = trncclGetLastError(comm);
  if (message.empty()) message = trnrtGetLastErrorMessage();
  if (message.empty()) message = trnrtGetErrorString(status);
  return "trnccl: " + message;
}

}  // namespace torch_trnccl
