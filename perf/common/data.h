// Element types on the host side of the benchmarks: names, sizes, encoding to and from the
// device representation, and the deterministic data model every check is built on.
//
// Data model: the value at element i of rank r's input depends only on (type, op, r, i, rep), so
// any rank can compute any other rank's input, and hence the expected output, on its own. Input
// values are drawn from small sets that every element type represents exactly (small integers,
// quarters, powers of two), so inputs never round; only the library's arithmetic can.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "trnccl/trnccl.h"

namespace trnccl::perf {

struct TypeInfo {
  trncclDataType_t type;
  std::string_view name;  // nccl-tests spelling
  size_t size;
  bool isFloat;
  bool isSigned;
  double epsilon;        // distance from 1 to the next value; 0 for integers
  double halfSubnormal;  // half the smallest subnormal: worst rounding error near zero
};

const TypeInfo& typeInfo(trncclDataType_t type);
std::optional<trncclDataType_t> parseType(std::string_view name);
std::string_view opName(trncclRedOp_t op);
std::optional<trncclRedOp_t> parseOp(std::string_view name);

inline constexpr trncclDataType_t kAllTypes[] = {
    trncclInt8,    trncclUint8,    trncclInt32,      trncclUint32,
    trncclInt64,   trncclUint64,   trncclFloat16,    trncclFloat32,
    trncclFloat64, trncclBfloat16, trncclFloat8e4m3, trncclFloat8e5m2};
inline constexpr trncclRedOp_t kAllOps[] = {trncclSum, trncclProd, trncclMax, trncclMin, trncclAvg};

// Writes value (rounded to nearest even, saturating as the type does) to dst in type's layout.
void encodeValue(trncclDataType_t type, double value, void* dst);
// Reads one element of type from src as a double (exact for every type but 64-bit integers
// beyond 2^53).
double decodeValue(trncclDataType_t type, const void* src);

// What one output element should hold: |actual - value| <= tolerance (NaN never matches).
struct Expect {
  double value = 0;
  double tolerance = 0;
};

// Which data to generate: everything that inputs depend on besides rank and element index.
struct DataKey {
  trncclDataType_t type = trncclFloat;
  trncclRedOp_t op = trncclSum;  // shapes the value set (no overflow under prod, ...)
  int nranks = 1;
  int rep = 0;  // varies data between checks
};

// Input element i of rank `rank`; exactly representable in key.type.
double inputValue(const DataKey& key, int rank, size_t i);
// Element i of the reduction over all ranks' inputs, with the tolerance the type allows for
// n-1 roundings in any order: none while every partial sum is representable, else
// (n-1) * eps/2 * sum|x|. Integers are exact, wrapping as the type does.
Expect reducedValue(const DataKey& key, size_t i);
// Input for data-movement collectives: distinct per (rank, i) where the type has room.
double movementValue(const DataKey& key, int rank, size_t i);

}  // namespace trnccl::perf
