// Test-side data and references for collectives, computed independently of the library:
// inputs are small integers (or +-powers of two for products) encoded by hand, and expected
// results are computed in double (floats) or in the integer type with wrap-around.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "trnccl/trnccl.h"
#include "unit/dtype/reference.h"

namespace trnccl::testing {

inline size_t typeSize(trncclDataType_t t) {
  static const size_t k[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return k[t];
}
inline bool isFloat(trncclDataType_t t) {
  return t >= trncclFloat16 && t != trncclInt64 && t != trncclUint64;
}
inline const char* typeName(trncclDataType_t t) {
  static const char* k[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                            "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return k[t];
}
inline const char* opName(trncclRedOp_t o) {
  static const char* k[] = {"sum", "prod", "max", "min", "avg"};
  return k[o];
}

// The input value of element i on `rank`, as a double that every type represents exactly. It
// depends on i only through i % kInputPeriod (period 3 for sums and the like, 5 for products),
// so tests encode one period and tile it, and check outputs against one period of expected
// values (tests/unit/dtype/reference_period_test.cc holds this).
inline constexpr size_t kInputPeriod = 15;
inline double inputValue(trncclRedOp_t op, int rank, size_t i) {
  if (op == trncclProd) {
    static const double k[] = {1.0, 2.0, 0.5, -1.0, 1.0};
    return k[(rank * 3 + i) % 5];
  }
  return static_cast<double>(static_cast<int>((rank * 7 + i * 3) % 9) - 4);  // -4..4
}

// Encodes a small exactly-representable value (integer in [-64,64] or +-2^k) into `type`.
inline void encode(trncclDataType_t t, double v, void* out) {
  using device::testing::FormatSpec;
  auto narrow = [&](const FormatSpec& spec) -> uint32_t {
    if (v == 0) return 0;
    uint32_t sign = v < 0 ? 1u : 0u;
    int e;
    double m = std::frexp(std::fabs(v), &e);  // v = m * 2^e, m in [0.5,1)
    uint32_t exp = static_cast<uint32_t>(e - 1 + spec.bias());
    uint32_t mant = static_cast<uint32_t>(std::ldexp(m * 2 - 1, spec.mantBits));
    return (sign << (spec.expBits + spec.mantBits)) | (exp << spec.mantBits) | mant;
  };
  switch (t) {
    case trncclInt8: {
      int8_t x = static_cast<int8_t>(v);
      std::memcpy(out, &x, 1);
      break;
    }
    case trncclUint8: {
      uint8_t x = static_cast<uint8_t>(static_cast<int>(v));
      std::memcpy(out, &x, 1);
      break;
    }
    case trncclInt32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(out, &x, 4);
      break;
    }
    case trncclUint32: {
      uint32_t x = static_cast<uint32_t>(static_cast<int64_t>(v));
      std::memcpy(out, &x, 4);
      break;
    }
    case trncclInt64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(out, &x, 8);
      break;
    }
    case trncclUint64: {
      uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(v));
      std::memcpy(out, &x, 8);
      break;
    }
    case trncclFloat32: {
      float x = static_cast<float>(v);
      std::memcpy(out, &x, 4);
      break;
    }
    case trncclFloat64:
      std::memcpy(out, &v, 8);
      break;
    case trncclFloat16: {
      uint16_t x = static_cast<uint16_t>(narrow(device::testing::kHalfSpec));
      std::memcpy(out, &x, 2);
      break;
    }
    case trncclBfloat16: {
      uint16_t x = static_cast<uint16_t>(narrow(device::testing::kBf16Spec));
      std::memcpy(out, &x, 2);
      break;
    }
    case trncclFloat8e4m3: {
      uint8_t x = static_cast<uint8_t>(narrow(device::testing::kE4m3Spec));
      std::memcpy(out, &x, 1);
      break;
    }
    case trncclFloat8e5m2: {
      uint8_t x = static_cast<uint8_t>(narrow(device::testing::kE5m2Spec));
      std::memcpy(out, &x, 1);
      break;
    }
    default:
      break;
  }
}

// Decodes element i of a buffer of `type` into a double (floats) — independent decoders.
inline double decodeFloat(trncclDataType_t t, const void* buf, size_t i) {
  const auto* p = static_cast<const unsigned char*>(buf);
  switch (t) {
    case trncclFloat32: {
      float x;
      std::memcpy(&x, p + 4 * i, 4);
      return x;
    }
    case trncclFloat64: {
      double x;
      std::memcpy(&x, p + 8 * i, 8);
      return x;
    }
    case trncclFloat16: {
      uint16_t x;
      std::memcpy(&x, p + 2 * i, 2);
      return device::testing::refDecode(device::testing::kHalfSpec, x);
    }
    case trncclBfloat16: {
      uint16_t x;
      std::memcpy(&x, p + 2 * i, 2);
      return device::testing::refDecode(device::testing::kBf16Spec, x);
    }
    case trncclFloat8e4m3:
      return device::testing::refDecode(device::testing::kE4m3Spec, p[i]);
    case trncclFloat8e5m2:
      return device::testing::refDecode(device::testing::kE5m2Spec, p[i]);
    default:
      return 0;
  }
}

// Relative precision of a float type (unit roundoff).
inline double unitRoundoff(trncclDataType_t t) {
  switch (t) {
    case trncclFloat16:
      return std::ldexp(1.0, -11);
    case trncclBfloat16:
      return std::ldexp(1.0, -8);
    case trncclFloat8e4m3:
      return std::ldexp(1.0, -4);
    case trncclFloat8e5m2:
      return std::ldexp(1.0, -3);
    case trncclFloat32:
      return std::ldexp(1.0, -24);
    default:
      return std::ldexp(1.0, -53);
  }
}

// Expected reduction of element i over nranks, as the raw bytes of the integer type (exact, with
// wrap-around) — for integer types only.
inline void expectedInteger(trncclDataType_t t, trncclRedOp_t op, int nranks, size_t i, void* out) {
  auto fold = [&](auto zero) {
    using T = decltype(zero);
    using U = std::make_unsigned_t<T>;
    T acc{};
    for (int r = 0; r < nranks; ++r) {
      unsigned char bytes[8] = {};  // room for any type: encode() writes by t, not by T
      encode(t, inputValue(op, r, i), bytes);
      T x{};
      std::memcpy(&x, bytes, sizeof(T));
      if (r == 0) {
        acc = x;
        continue;
      }
      switch (op) {
        case trncclSum:
        case trncclAvg:
          acc = static_cast<T>(static_cast<U>(acc) + static_cast<U>(x));
          break;
        case trncclProd:
          acc = static_cast<T>(static_cast<U>(acc) * static_cast<U>(x));
          break;
        case trncclMax:
          acc = acc > x ? acc : x;
          break;
        case trncclMin:
          acc = acc < x ? acc : x;
          break;
        default:
          break;
      }
    }
    if (op == trncclAvg) acc = static_cast<T>(acc / static_cast<T>(nranks));
    std::memcpy(out, &acc, sizeof(T));
  };
  switch (t) {
    case trncclInt8:
      fold(int8_t{});
      break;
    case trncclUint8:
      fold(uint8_t{});
      break;
    case trncclInt32:
      fold(int32_t{});
      break;
    case trncclUint32:
      fold(uint32_t{});
      break;
    case trncclInt64:
      fold(int64_t{});
      break;
    case trncclUint64:
      fold(uint64_t{});
      break;
    default:
      break;
  }
}

// Expected float reduction in double, and the tolerance for a result rounded in `t` at every
// one of the nranks-1 steps (plus the final division for avg).
struct FloatExpectation {
  double value;
  double tolerance;
};
inline FloatExpectation expectedFloat(trncclDataType_t t, trncclRedOp_t op, int nranks, size_t i) {
  double acc = inputValue(op, 0, i), mag = std::fabs(acc);
  for (int r = 1; r < nranks; ++r) {
    double x = inputValue(op, r, i);
    switch (op) {
      case trncclSum:
      case trncclAvg:
        acc += x;
        break;
      case trncclProd:
        acc *= x;
        break;
      case trncclMax:
        acc = std::max(acc, x);
        break;
      case trncclMin:
        acc = std::min(acc, x);
        break;
      default:
        break;
    }
    mag += std::fabs(x);
  }
  if (op == trncclAvg) {
    acc /= nranks;
    mag /= nranks;
  }
  double tol = (op == trncclSum || op == trncclAvg) ? 2.0 * nranks * unitRoundoff(t) * mag : 0.0;
  return {acc, tol};
}

// Fills `buf` with `count` elements of rank's input: one period encoded, then tiled.
inline void encodeInputs(trncclDataType_t t, trncclRedOp_t op, int rank, unsigned char* buf,
                         size_t count) {
  const size_t elem = typeSize(t), head = std::min(count, kInputPeriod);
  for (size_t i = 0; i < head; ++i) encode(t, inputValue(op, rank, i), buf + i * elem);
  for (size_t done = head; done < count;) {  // copy what is there, doubling each time
    const size_t n = std::min(done, count - done);
    std::memcpy(buf + done * elem, buf, n * elem);
    done += n;
  }
}

// One period of the expected reduction over nranks, and the check of an output element of
// source index i against it: floats within the tolerance, integers bitwise.
class ReducedReference {
 public:
  ReducedReference(trncclDataType_t t, trncclRedOp_t op, int nranks)
      : type_(t), elem_(typeSize(t)) {
    for (size_t k = 0; k < kInputPeriod; ++k) {
      if (isFloat(t)) {
        floats_[k] = expectedFloat(t, op, nranks, k);
      } else {
        expectedInteger(t, op, nranks, k, bytes_[k]);
      }
    }
  }
  bool ok(const unsigned char* got, size_t i) const {
    const size_t k = i % kInputPeriod;
    if (isFloat(type_)) {
      return std::fabs(decodeFloat(type_, got, 0) - floats_[k].value) <= floats_[k].tolerance;
    }
    return std::memcmp(bytes_[k], got, elem_) == 0;
  }
  const FloatExpectation& expected(size_t i) const { return floats_[i % kInputPeriod]; }

 private:
  trncclDataType_t type_;
  size_t elem_;
  FloatExpectation floats_[kInputPeriod] = {};
  unsigned char bytes_[kInputPeriod][8] = {};
};

}  // namespace trnccl::testing
