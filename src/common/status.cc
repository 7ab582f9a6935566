#include "common/status.h"

namespace trnccl {

const std::string& Status::noMessage() {
  static const std::string empty;
  return empty;
}

const char* codeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kDeviceError:
      return "device error";
    case Code::kSystemError:
      return "system error";
    case Code::kInternalError:
      return "internal error";
    case Code::kInvalidArgument:
      return "invalid argument";
    case Code::kInvalidUsage:
      return "invalid usage";
    case Code::kRemoteError:
      return "remote error";
    case Code::kInProgress:
      return "in progress";
    case Code::kTimeout:
      return "timeout";
  }
  return "unknown";
}

}  // namespace trnccl
