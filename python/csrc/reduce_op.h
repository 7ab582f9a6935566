// c10d's ReduceOp as a trncclRedOp_t, for one call.
//
// SUM, PRODUCT, MIN, MAX and AVG map one to one; on bool tensors (reduced as uint8) SUM is MAX
// and PRODUCT is MIN (logical or / and, as ProcessGroupNCCL does), and AVG is refused.
// BAND, BOR and BXOR have no trnccl counterpart and are refused by name. PREMUL_SUM
// (dist._make_nccl_premul_sum(factor)) is an operator of trncclRedOpCreatePreMulSum made from
// the op's factor for this call and destroyed after it is issued (the call keeps it).
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

  ~ReduceOp();

  trncclRedOp_t get() const { return op_; }

 private:
  trncclRedOp_t op_ = trncclSum;
  trncclComm_t comm_ = nullptr;  // set when op_ is a PreMulSum operator to destroy
};

}  // namespace torch_trnccl
