#include "transports/ofi/fid.h"

#include <fmt/format.h>

#include "common/log.h"

namespace trnccl::transport::ofi {

void closeFid(fid_t fid, const char* what) {
  int rc = fi_close(fid);
  if (rc != 0) TRN_WARN(kNet, "ofi: closing the {} failed: {}", what, fiError("fi_close", rc));
}

std::string fiError(const char* call, long code) {
  int positive = static_cast<int>(code < 0 ? -code : code);
  return fmt::format("{} failed: {} (-{})", call, fi_strerror(positive), positive);
}

}  // namespace trnccl::transport::ofi
