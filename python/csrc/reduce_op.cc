#include "reduce_op.h"

#include <string>

#include "errors.h"

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

}  // namespace

ReduceOp::ReduceOp(const c10d::ReduceOp& op, at::ScalarType type, trncclComm_t /*comm*/,
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
    case c10d::ReduceOp::PREMUL_SUM:
      // Wire here: trncclRedOpCreatePreMulSum(&op_, factor, type, residence, comm), with a
      // destructor calling trncclRedOpDestroy (the C API gains them in issue 19).
      refuse(api, op.op_, "trnccl's C API has no trncclRedOpCreatePreMulSum yet");
    default:
      refuse(api, op.op_, "trnccl reduces with SUM, PRODUCT, MIN, MAX and AVG only");
  }
  if (isComplex && op_ != trncclSum && op_ != trncclAvg) {
    refuse(api, op.op_, "complex tensors are reduced as pairs of reals, so only SUM and AVG apply");
  }
}

}  // namespace torch_trnccl
