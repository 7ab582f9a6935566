// c10d's ReduceOp as a trncclRedOp_t, for one call.
//
// SUM, PRODUCT, MIN, MAX and AVG map one to one; on bool tensors (reduced as uint8) SUM is MAX
// and PRODUCT is MIN (logical or / and, as ProcessGroupNCCL does), and AVG is refused.
// BAND, BOR and BXOR have no trnccl counterpart and are refused by name. PREMUL_SUM needs
// trncclRedOpCreatePreMulSum, which the C API does not have yet: this class is the one place
// to create it (from the op's NCCLPreMulSumSupplement factor) and destroy it after the call.
#pragma once

#include <ATen/ATen.h>

#include <torch/csrc/distributed/c10d/Types.hpp>

#include "trnccl/trnccl.h"

namespace torch_trnccl {

class ReduceOp {
 public:
  // Throws a RuntimeError naming `api` and the op when trnccl cannot apply it to `type`.
  ReduceOp(const c10d::ReduceOp& op, at::ScalarType type, trncclComm_t comm, const char* api);
  ReduceOp(const ReduceOp&) = delete;
  ReduceOp& operator=(const ReduceOp&) = delete;

  trncclRedOp_t get() const { return op_; }

 private:
  trncclRedOp_t op_ = trncclSum;
};

}  // namespace torch_trnccl
