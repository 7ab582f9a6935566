// The transport's own host buffers (bounce rings, receive slots, headers): page-aligned and,
// when the provider needs local registration (FI_MR_LOCAL), registered with the domain for
// sending and receiving. The registration closes before the memory is freed, and both before
// the domain closes (the owner keeps buffers in objects destroyed before the domain).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "common/status.h"
#include "transports/ofi/fid.h"

namespace trnccl::transport::ofi {

// A requested key for fi_mr_reg, unique within the process. Keys matter only without
// FI_MR_PROV_KEY, and then must be unique within the domain; every registration of the
// transport (these buffers and the MrCache's windows) draws from this one counter.
uint64_t nextMrKey();

class RegisteredBuffer {
 public:
  RegisteredBuffer() = default;
  // `domain` null: plain memory, no registration.
  static Result<RegisteredBuffer> allocate(fid_domain* domain, size_t bytes);

  std::byte* data() const { return memory_.get(); }
  size_t size() const { return bytes_; }
  // The descriptor fi_tsend/fi_trecv want for this memory (null when not registered).
  void* desc() const { return desc_; }
  explicit operator bool() const { return memory_ != nullptr; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> memory_;  // declared first: freed after the registration
  size_t bytes_ = 0;
  MrPtr mr_{nullptr, {"memory registration"}};
  void* desc_ = nullptr;
};

}  // namespace trnccl::transport::ofi
