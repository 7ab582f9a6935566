// Custom reduction operators (trncclRedOpCreatePreMulSum): a table per communicator, and what a
// call that names one needs to run it.
#pragma once

#include <array>
#include <cstddef>
#include <mutex>
#include <optional>
#include <vector>

#include "common/status.h"
#include "device/reduce.h"
#include "trnccl/trnccl.h"

namespace trnccl::api {

// One pre-multiply-and-sum operator: every rank's input is multiplied by its scalar, then the
// products are summed. The scalar is kept by value (trncclScalarHostImmediate, read at
// creation) or as the device pointer that is read when the collective runs (trncclScalarDevice).
struct PreMul {
  device::DataType type = device::DataType::kFloat32;
  bool onDevice = false;
  std::array<std::byte, 8> value{};  // host immediate: the scalar's bytes
  const void* pointer = nullptr;     // device residence
  const void* scalar() const { return onDevice ? pointer : value.data(); }
};

// A communicator's operators, by handle: handle trncclNumOps + i is slot i (as NCCL encodes
// them, so built-in ops and handles never collide). Thread-safe.
class RedOpTable {
 public:
  trncclRedOp_t add(const PreMul& op);
  // False when `op` is no live handle of this table.
  bool remove(trncclRedOp_t op);
  std::optional<PreMul> find(trncclRedOp_t op) const;

 private:
  mutable std::mutex mu_;
  std::vector<std::optional<PreMul>> slots_;
};

// The operator a call of `comm` on `type` names: nullopt for a built-in op, the PreMul of a
// handle of this communicator's table made for `type`; InvalidArgument otherwise.
// A built-in op is answered inline (every reducing call asks); handles by resolveHandle.
Result<std::optional<PreMul>> resolveHandle(const char* what, trncclComm_t comm, trncclRedOp_t op,
                                            trncclDataType_t type);
inline Result<std::optional<PreMul>> resolveOp(const char* what, trncclComm_t comm,
                                               trncclRedOp_t op, trncclDataType_t type) {
  if (static_cast<int>(op) >= 0 && op < trncclNumOps) return std::optional<PreMul>{};
  return resolveHandle(what, comm, op, type);
}

}  // namespace trnccl::api
