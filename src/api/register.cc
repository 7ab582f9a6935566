// trncclMemAlloc / trncclMemFree and trncclCommRegister / trncclCommDeregister (NCCL's local
// buffer registration). A registration is an entry of the communicator's RegisteredMemory
// (transports/core/registered.h); the handle is its id, which the table never reuses, so a
// second deregistration or a made-up handle is found to be no registration instead of
// touching freed memory.
#include <cstdint>

#include "api/handle.h"
#include "trnccl/trnccl.h"

using trnccl::api::fail;

extern "C" {

trncclResult_t trncclMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return fail(trnccl::invalidArgument("trncclMemAlloc: ptr is NULL"));
  if (size == 0) return fail(trnccl::invalidArgument("trncclMemAlloc: size is 0"));
  if (trnrtError_t e = trnrtMalloc(ptr, size); e != trnrtSuccess) {
    return fail(trnccl::Status(
        trnccl::Code::kSystemError,
        fmt::format("trncclMemAlloc: {} bytes: {}", size, trnrtGetLastErrorMessage())));
  }
  return trncclSuccess;
}

trncclResult_t trncclMemFree(void* ptr) {
  if (ptr == nullptr) return trncclSuccess;
  if (trnrtFree(ptr) != trnrtSuccess) {
    return fail(trnccl::invalidArgument("trncclMemFree: {} is not memory of trncclMemAlloc", ptr));
  }
  return trncclSuccess;
}

trncclResult_t trncclCommRegister(const trncclComm_t comm, void* buff, size_t size, void** handle) {
  constexpr const char* kWhat = "trncclCommRegister";
  if (buff == nullptr || handle == nullptr) {
    return fail(
        trnccl::invalidArgument("{}: {} is NULL", kWhat, buff == nullptr ? "buff" : "handle"));
  }
  if (size == 0) return fail(trnccl::invalidArgument("{}: size is 0", kWhat));
  auto c = trnccl::api::usable(comm);
  if (!c) return fail(c.status());
  const uint64_t id = (*c)->registered().add(buff, size);
  *handle = reinterpret_cast<void*>(static_cast<uintptr_t>(id));
  return trncclSuccess;
}

trncclResult_t trncclCommDeregister(const trncclComm_t comm, void* handle) {
  constexpr const char* kWhat = "trncclCommDeregister";
  if (handle == nullptr) return fail(trnccl::invalidArgument("{}: handle is NULL", kWhat));
  auto c = trnccl::api::initialised(comm);
  if (!c) return fail(c.status());
  if (!(*c)->registered().remove(reinterpret_cast<uintptr_t>(handle))) {
    return fail(trnccl::invalidArgument(
        "{}: handle {} is no live registration of this communicator (never registered, or "
        "deregistered already)",
        kWhat, handle));
  }
  return trncclSuccess;
}

}  // extern "C"
