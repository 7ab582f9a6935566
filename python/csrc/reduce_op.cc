#include "reduce_op.h"

#include <string>

#include "errors.h"
#include "tensors.h"

namespace torch_trnccl {
namespace {

const char* opName(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM:
      return "SUM";
    case c10d::ReduceOp::AVG:
      return "AVG";
    case c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case c10d::ReduceOp::MIN:
      return "MIN";
    case c10d::ReduceOp::MAX:
      return "MAX";
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "UNUSED";
  }
}

[[noreturn]] void refuse(const char* api, c10d::ReduceOp::RedOpType op, const std::string& why) {
  fail(std::string(api) + ": ReduceOp." + opName(op) + " is not supported: " + why);
}

// PREMUL_SUM's factor as one element of the call's reduction type (a complex tensor's real
// type): a double (dist._make_nccl_premul_sum(2.0)) or the one tensor of a list of factors.
at::Tensor premulFactor(const c10d::ReduceOp& op, at::ScalarType type, const char* api) {
  auto* factor = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  if (factor == nullptr) refuse(api, op.op_, "the op carries no factor");
  const auto real = at::TensorOptions().dtype(c10::toRealValueType(type));
  if (factor->tensor_factors.empty()) return at::full({1}, factor->double_factor, real);
  if (factor->tensor_factors.size() != 1 || factor->tensor_factors[0].numel() != 1) {
    refuse(api, op.op_, "the factor must be one tensor of one element (one device per process)");
  }
  return factor->tensor_factors[0].to(real).contiguous();
}

}  // namespace

ReduceOp::ReduceOp(const c10d::ReduceOp& op, at::ScalarType type, trncclComm_t comm,
                   const char* api) {
  const bool isBool = type == at::kBool;
  const bool isComplex = at::isComplexType(type);
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      op_ = isBool ? trncclMax : trncclSum;
      break;
    case c10d::ReduceOp::PRODUCT:
      op_ = isBool ? trncclMin : trncclProd;
      break;
    case c10d::ReduceOp::MIN:
      op_ = trncclMin;
      break;
    case c10d::ReduceOp::MAX:
      op_ = trncclMax;
      break;
    case c10d::ReduceOp::AVG:
      if (isBool) refuse(api, op.op_, "the average of bool tensors is undefined");
      op_ = trncclAvg;
      break;
    case c10d::ReduceOp::PREMUL_SUM: {
      if (isBool) refuse(api, op.op_, "bool tensors have no product with a factor");
      // The factor is read now (host immediate): a CPU tensor factor's value at the call.
      at::Tensor factor = premulFactor(op, type, api);
      Buffer scalar = reducible(factor, api);
      check(trncclRedOpCreatePreMulSum(&op_, scalar.data, scalar.type, trncclScalarHostImmediate,
                                       comm),
            comm, std::string(api) + ": trncclRedOpCreatePreMulSum");
      comm_ = comm;
      break;
    }
    default:
      refuse(api, op.op_, "trnccl reduces with SUM, PRODUCT, MIN, MAX and AVG only");
  }
  if (isComplex && op_ < trncclNumOps && op_ != trncclSum && op_ != trncclAvg) {
    refuse(api, op.op_, "complex tensors are reduced as pairs of reals, so only SUM and AVG apply");
  }
}

ReduceOp::~ReduceOp() {
  // NCCL's rule, kept by trnccl: destroying an operator does not disturb calls that named it.
  if (comm_ != nullptr) trncclRedOpDestroy(op_, comm_);
}

}  // namespace torch_trnccl
