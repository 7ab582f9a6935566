#include "transports/ofi/buffer.h"

#include <atomic>
#include <cstring>

namespace trnccl::transport::ofi {

uint64_t nextMrKey() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

Result<RegisteredBuffer> RegisteredBuffer::allocate(fid_domain* domain, size_t bytes) {
  constexpr size_t kAlign = 4096;
  size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* memory = nullptr;
  if (::posix_memalign(&memory, kAlign, rounded) != 0) {
    return Status(Code::kSystemError, fmt::format("ofi: cannot allocate {} bytes", rounded));
  }
  std::memset(memory, 0, rounded);
  RegisteredBuffer buffer;
  buffer.memory_.reset(static_cast<std::byte*>(memory));
  buffer.bytes_ = bytes;
  if (domain == nullptr) return buffer;
  fid_mr* mr = nullptr;
  int rc = fi_mr_reg(domain, memory, rounded, FI_SEND | FI_RECV, 0, nextMrKey(), 0, &mr, nullptr);
  if (rc != 0) {
    return Status(Code::kSystemError,
                  fmt::format("ofi: registering {} bytes: {}", rounded, fiError("fi_mr_reg", rc)));
  }
  buffer.mr_.reset(mr);
  buffer.desc_ = fi_mr_desc(mr);
  return buffer;
}

}  // namespace trnccl::transport::ofi
