// trncclRedOpCreatePreMulSum / trncclRedOpDestroy, and resolving an op argument of a call.
#include "api/redop.h"

#include <cstring>

#include "api/enqueue.h"
#include "device/device_api.h"

namespace trnccl::api {

trncclRedOp_t RedOpTable::add(const PreMul& op) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t slot = 0;
  while (slot < slots_.size() && slots_[slot]) ++slot;
  if (slot == slots_.size()) slots_.emplace_back();
  slots_[slot] = op;
  return static_cast<trncclRedOp_t>(trncclNumOps + static_cast<int>(slot));
}

bool RedOpTable::remove(trncclRedOp_t op) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t slot = static_cast<int64_t>(op) - trncclNumOps;
  if (slot < 0 || slot >= static_cast<int64_t>(slots_.size()) || !slots_[slot]) return false;
  slots_[slot].reset();
  return true;
}

std::optional<PreMul> RedOpTable::find(trncclRedOp_t op) const {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t slot = static_cast<int64_t>(op) - trncclNumOps;
  if (slot < 0 || slot >= static_cast<int64_t>(slots_.size())) return std::nullopt;
  return slots_[slot];
}

Result<std::optional<PreMul>> resolveHandle(const char* what, trncclComm_t comm, trncclRedOp_t op,
                                            trncclDataType_t type) {
  if (static_cast<int>(op) >= 0 && op < trncclNumOps) return std::optional<PreMul>{};
  std::optional<PreMul> custom;
  if (comm != nullptr && static_cast<int>(op) >= trncclNumOps) custom = comm->redOps.find(op);
  if (!custom) {
    return invalidArgument(
        "{}: invalid reduction op {} (valid: 0..{}, or a handle of trncclRedOpCreatePreMulSum "
        "on this communicator)",
        what, static_cast<int>(op), trncclNumOps - 1);
  }
  if (custom->type != static_cast<device::DataType>(type)) {
    return invalidArgument("{}: reduction op {} was created for {}, the call is of {}", what,
                           static_cast<int>(op), device::dataTypeName(custom->type),
                           device::dataTypeName(static_cast<device::DataType>(type)));
  }
  return custom;
}

}  // namespace trnccl::api

using trnccl::api::fail;

extern "C" {

trncclResult_t trncclRedOpCreatePreMulSum(trncclRedOp_t* op, void* scalar,
                                          trncclDataType_t datatype,
                                          trncclScalarResidence_t residence, trncclComm_t comm) {
  constexpr const char* kWhat = "trncclRedOpCreatePreMulSum";
  if (op == nullptr || scalar == nullptr) {
    return fail(trnccl::invalidArgument("{}: {} is NULL", kWhat, op == nullptr ? "op" : "scalar"));
  }
  if (static_cast<int>(datatype) < 0 || datatype >= trncclNumTypes) {
    return fail(trnccl::invalidArgument("{}: invalid datatype {} (valid: 0..{})", kWhat,
                                        static_cast<int>(datatype), trncclNumTypes - 1));
  }
  if (residence != trncclScalarDevice && residence != trncclScalarHostImmediate) {
    return fail(trnccl::invalidArgument(
        "{}: invalid residence {} (trncclScalarDevice 0 or trncclScalarHostImmediate 1)", kWhat,
        static_cast<int>(residence)));
  }
  auto c = trnccl::api::usable(comm);
  if (!c) return fail(c.status());
  trnccl::api::PreMul pm;
  pm.type = static_cast<trnccl::device::DataType>(datatype);
  pm.onDevice = residence == trncclScalarDevice;
  if (pm.onDevice) {
    pm.pointer = scalar;
  } else {
    std::memcpy(pm.value.data(), scalar, trnccl::device::dataTypeSize(pm.type));
  }
  *op = comm->redOps.add(pm);
  return trncclSuccess;
}

trncclResult_t trncclRedOpDestroy(trncclRedOp_t op, trncclComm_t comm) {
  if (comm == nullptr) return fail(trnccl::invalidArgument("trncclRedOpDestroy: comm is NULL"));
  if (static_cast<int>(op) >= 0 && op < trncclNumOps) {
    return fail(trnccl::invalidArgument("trncclRedOpDestroy: op {} is a built-in operator",
                                        static_cast<int>(op)));
  }
  if (!comm->redOps.remove(op)) {
    return fail(trnccl::invalidArgument(
        "trncclRedOpDestroy: op {} is no live operator of this communicator",
        static_cast<int>(op)));
  }
  return trncclSuccess;
}

}  // extern "C"
