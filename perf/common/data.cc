#include "common/data.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace trnccl::perf {
namespace {

// Indexed by trncclDataType_t. Epsilons: 2^-mantissa bits.
constexpr std::array<TypeInfo, trncclNumTypes> kTypes{{
    {trncclInt8, "int8", 1, false, true, 0, 0},
    {trncclUint8, "uint8", 1, false, false, 0, 0},
    {trncclInt32, "int32", 4, false, true, 0, 0},
    {trncclUint32, "uint32", 4, false, false, 0, 0},
    {trncclInt64, "int64", 8, false, true, 0, 0},
    {trncclUint64, "uint64", 8, false, false, 0, 0},
    {trncclFloat16, "half", 2, true, true, 0x1p-10, 0x1p-25},
    {trncclFloat32, "float", 4, true, true, 0x1p-23, 0x1p-150},
    {trncclFloat64, "double", 8, true, true, 0x1p-52, 0x1p-1074},
    {trncclBfloat16, "bfloat16", 2, true, true, 0x1p-7, 0x1p-134},
    {trncclFloat8e4m3, "f8e4m3", 1, true, true, 0x1p-3, 0x1p-10},
    {trncclFloat8e5m2, "f8e5m2", 1, true, true, 0x1p-2, 0x1p-17},
}};

constexpr std::array<std::string_view, trncclNumOps> kOpNames{"sum", "prod", "max", "min", "avg"};

// A binary float of 1 sign, expBits exponent (IEEE bias) and mantBits mantissa bits.
// ieee = false is OCP fp8 e4m3: no infinities, only S.1111.111 is NaN, overflow saturates.
struct NarrowFormat {
  int expBits;
  int mantBits;
  bool ieee;
};
constexpr NarrowFormat kHalf{5, 10, true};
constexpr NarrowFormat kBf16{8, 7, true};
constexpr NarrowFormat kE4m3{4, 3, false};
constexpr NarrowFormat kE5m2{5, 2, true};

uint32_t encodeNarrow(double v, NarrowFormat f) {
  const int bias = (1 << (f.expBits - 1)) - 1;
  const uint32_t sign = std::signbit(v) ? 1u << (f.expBits + f.mantBits) : 0;
  const uint32_t expOnes = ((1u << f.expBits) - 1) << f.mantBits;
  const uint32_t allOnes = (1u << (f.expBits + f.mantBits)) - 1;
  if (std::isnan(v)) return sign | (f.ieee ? expOnes | (1u << (f.mantBits - 1)) : allOnes);
  const uint32_t maxFinite = f.ieee ? expOnes - 1 : allOnes - 1;
  const uint32_t overflow = f.ieee ? expOnes : maxFinite;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | overflow;
  if (a == 0) return sign;
  int e = 0;
  std::frexp(a, &e);
  int exponent = e - 1;  // a in [2^exponent, 2^(exponent+1))
  const int minExponent = 1 - bias;
  uint64_t code = 0;
  if (exponent < minExponent) {  // subnormal; rounding up to 2^mant gives the min normal code
    code = uint64_t(std::nearbyint(std::ldexp(a, f.mantBits - minExponent)));
  } else {
    uint64_t m = uint64_t(std::nearbyint(std::ldexp(a, f.mantBits - exponent)));
    if (m == (uint64_t{1} << (f.mantBits + 1))) {
      m >>= 1;
      ++exponent;
    }
    if (exponent + bias > (1 << f.expBits) - 1) return sign | overflow;
    code = (uint64_t(exponent + bias) << f.mantBits) | (m - (uint64_t{1} << f.mantBits));
  }
  return sign | uint32_t(code > maxFinite ? overflow : code);
}

double decodeNarrow(uint32_t code, NarrowFormat f) {
  const int bias = (1 << (f.expBits - 1)) - 1;
  const bool negative = (code >> (f.expBits + f.mantBits)) & 1;
  const uint32_t exponent = (code >> f.mantBits) & ((1u << f.expBits) - 1);
  const uint32_t mant = code & ((1u << f.mantBits) - 1);
  const uint32_t expMax = (1u << f.expBits) - 1;
  double v = 0;
  if (f.ieee && exponent == expMax) {
    v = mant ? NAN : INFINITY;
  } else if (!f.ieee && exponent == expMax && mant == (1u << f.mantBits) - 1) {
    v = NAN;
  } else if (exponent == 0) {
    v = std::ldexp(double(mant), 1 - bias - f.mantBits);
  } else {
    v = std::ldexp(double((1u << f.mantBits) + mant), int(exponent) - bias - f.mantBits);
  }
  return negative ? -v : v;
}

template <typename T>
void store(void* dst, T v) {
  std::memcpy(dst, &v, sizeof(T));
}
template <typename T>
T load(const void* src) {
  T v;
  std::memcpy(&v, src, sizeof(T));
  return v;
}

// Integer result of wrapping `bits` (a sum or product mod 2^64) to the type's width.
double wrapToType(trncclDataType_t type, uint64_t bits) {
  switch (type) {
    case trncclInt8:
      return double(int8_t(bits));
    case trncclUint8:
      return double(uint8_t(bits));
    case trncclInt32:
      return double(int32_t(bits));
    case trncclUint32:
      return double(uint32_t(bits));
    case trncclInt64:
      return double(int64_t(bits));
    default:
      return double(bits);
  }
}

// Float sum/avg inputs are multiples of kSumQuantum, so partial sums stay exact while their
// magnitude is below kSumQuantum * 2 / epsilon (e5m2: 4, e4m3: 8, bf16: 128, half: 1024).
constexpr double kSumQuantum = 0.5;
constexpr uint64_t kSumSteps = 5;

uint64_t mix(const DataKey& key, int rank, size_t i) {
  uint64_t x = uint64_t(i) * 0x9E3779B97F4A7C15ull + uint64_t(rank + 1) * 0xC2B2AE3D27D4EB4Full +
               uint64_t(key.rep) * 0x165667B19E3779F9ull;
  x ^= x >> 31;
  x *= 0xD6E8FEB86659FD93ull;
  return x ^ (x >> 32);
}

}  // namespace

const TypeInfo& typeInfo(trncclDataType_t type) { return kTypes.at(size_t(type)); }

std::optional<trncclDataType_t> parseType(std::string_view name) {
  for (const TypeInfo& t : kTypes) {
    if (t.name == name) return t.type;
  }
  // Aliases nccl-tests also accepts.
  if (name == "char") return trncclInt8;
  if (name == "int") return trncclInt32;
  if (name == "fp16" || name == "float16") return trncclFloat16;
  if (name == "fp32" || name == "float32") return trncclFloat32;
  if (name == "fp64" || name == "float64") return trncclFloat64;
  if (name == "bf16") return trncclBfloat16;
  return std::nullopt;
}

std::string_view opName(trncclRedOp_t op) { return kOpNames.at(size_t(op)); }

std::optional<trncclRedOp_t> parseOp(std::string_view name) {
  for (size_t i = 0; i < kOpNames.size(); ++i) {
    if (kOpNames[i] == name) return trncclRedOp_t(i);
  }
  return std::nullopt;
}

void encodeValue(trncclDataType_t type, double value, void* dst) {
  switch (type) {
    case trncclInt8:
      return store(dst, int8_t(int64_t(value)));
    case trncclUint8:
      return store(dst, uint8_t(uint64_t(value)));
    case trncclInt32:
      return store(dst, int32_t(int64_t(value)));
    case trncclUint32:
      return store(dst, uint32_t(uint64_t(value)));
    case trncclInt64:
      return store(dst, int64_t(value));
    case trncclUint64:
      return store(dst, uint64_t(value));
    case trncclFloat16:
      return store(dst, uint16_t(encodeNarrow(value, kHalf)));
    case trncclFloat32:
      return store(dst, float(value));
    case trncclFloat64:
      return store(dst, value);
    case trncclBfloat16:
      return store(dst, uint16_t(encodeNarrow(value, kBf16)));
    case trncclFloat8e4m3:
      return store(dst, uint8_t(encodeNarrow(value, kE4m3)));
    case trncclFloat8e5m2:
      return store(dst, uint8_t(encodeNarrow(value, kE5m2)));
    default:
      return;
  }
}

double decodeValue(trncclDataType_t type, const void* src) {
  switch (type) {
    case trncclInt8:
      return load<int8_t>(src);
    case trncclUint8:
      return load<uint8_t>(src);
    case trncclInt32:
      return load<int32_t>(src);
    case trncclUint32:
      return load<uint32_t>(src);
    case trncclInt64:
      return double(load<int64_t>(src));
    case trncclUint64:
      return double(load<uint64_t>(src));
    case trncclFloat16:
      return decodeNarrow(load<uint16_t>(src), kHalf);
    case trncclFloat32:
      return load<float>(src);
    case trncclFloat64:
      return load<double>(src);
    case trncclBfloat16:
      return decodeNarrow(load<uint16_t>(src), kBf16);
    case trncclFloat8e4m3:
      return decodeNarrow(load<uint8_t>(src), kE4m3);
    case trncclFloat8e5m2:
      return decodeNarrow(load<uint8_t>(src), kE5m2);
    default:
      return NAN;
  }
}

double inputValue(const DataKey& key, int rank, size_t i) {
  const TypeInfo& t = typeInfo(key.type);
  const uint64_t x = mix(key, rank, i);
  switch (key.op) {
    case trncclProd: {
      // Mostly +-1 with a 2 (and, for floats, a 0.5) in a rank-rotating pattern: a product over
      // any run of consecutive ranks stays within [0.5, 2] * 2^(n/4), no overflow for floats.
      const size_t k = (size_t(rank) + i) % 4;
      double v = k == 0 ? 2.0 : (k == 2 && t.isFloat ? 0.5 : 1.0);
      return t.isSigned && (x & 7) == 0 ? -v : v;
    }
    case trncclMax:
    case trncclMin:
      if (t.isFloat) return double(int(x % 17) - 8);  // integers every format holds exactly
      return t.isSigned ? double(int(x % 101) - 50) : double(x % 101);
    default:  // sum, avg: small values so n-rank sums stay far from overflow
      if (t.isFloat) return double(int(x % kSumSteps) - 2) * kSumQuantum;  // halves in [-1, 1]
      return t.isSigned ? double(int(x % 5) - 2) : double(x % 5);
  }
}

Expect reducedValue(const DataKey& key, size_t i) {
  const TypeInfo& t = typeInfo(key.type);
  const int n = key.nranks;
  if (key.op == trncclMax || key.op == trncclMin) {
    double best = inputValue(key, 0, i);
    for (int r = 1; r < n; ++r) {
      const double v = inputValue(key, r, i);
      best = key.op == trncclMax ? std::max(best, v) : std::min(best, v);
    }
    return {best, 0};
  }
  if (!t.isFloat) {
    // Sum and product wrap modulo 2^bits in the library; do the same in 64 bits, then narrow.
    uint64_t acc = key.op == trncclProd ? 1 : 0;
    for (int r = 0; r < n; ++r) {
      const uint64_t v = uint64_t(int64_t(inputValue(key, r, i)));
      acc = key.op == trncclProd ? acc * v : acc + v;
    }
    double value = wrapToType(key.type, acc);
    if (key.op == trncclAvg) {  // the wrapped sum divided by n, truncating toward zero
      value = t.isSigned ? double(int64_t(value) / n) : double(uint64_t(value) / uint64_t(n));
    }
    return {value, 0};
  }
  // Floating: products of +-1, 2 and 0.5 are exact. Sums: each of the n-1 roundings of a
  // partial sum errs by at most eps/2 of its magnitude, which never exceeds sumAbs, and there
  // is no rounding at all while sumAbs is within the range where the input grid is exact.
  const double u = t.epsilon / 2;
  if (key.op == trncclProd) {
    double p = 1;
    for (int r = 0; r < n; ++r) p *= inputValue(key, r, i);
    return {p, 0};
  }
  double sum = 0, sumAbs = 0;
  for (int r = 0; r < n; ++r) {
    const double v = inputValue(key, r, i);
    sum += v;
    sumAbs += std::fabs(v);
  }
  const bool exact = sumAbs <= kSumQuantum * 2 / t.epsilon;
  const double sumTolerance = exact ? 0 : (n - 1) * u * sumAbs;
  if (key.op == trncclAvg) {  // the sum's error shrinks by n, the division rounds once more
    const double avg = sum / n;
    return {avg, sumTolerance / n + u * std::fabs(avg) + t.halfSubnormal};
  }
  return {sum, sumTolerance};
}

double movementValue(const DataKey& key, int rank, size_t i) {
  const TypeInfo& t = typeInfo(key.type);
  const uint64_t x = mix(key, rank, i);
  switch (key.type) {
    case trncclFloat32:
    case trncclFloat64:
    case trncclInt32:
    case trncclUint32:
    case trncclInt64:
    case trncclUint64:
      return double(x % (1u << 20));  // exact in float
    case trncclFloat16:
      return double(x % 2049);
    default:  // 8-bit types and bf16: what fits exactly
      if (t.isFloat) return double(int(x % 17) - 8);
      return t.isSigned ? double(int(x % 255) - 127) : double(x % 256);
  }
}

}  // namespace trnccl::perf
