// Independent reference for the narrow float formats, written from the format definitions
// (sign, exponent, mantissa and std::ldexp) without calling the library's codecs.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace trnccl::device::testing {

struct FormatSpec {
  const char* name;
  int expBits;
  int mantBits;
  bool ieee;  // all-ones exponent is inf/NaN; false: OCP e4m3, only S.1111.111 is NaN
  int totalBits() const { return 1 + expBits + mantBits; }
  int bias() const { return (1 << (expBits - 1)) - 1; }
};

inline constexpr FormatSpec kHalfSpec{"half", 5, 10, true};
inline constexpr FormatSpec kBf16Spec{"bfloat16", 8, 7, true};
inline constexpr FormatSpec kE4m3Spec{"f8e4m3", 4, 3, false};
inline constexpr FormatSpec kE5m2Spec{"f8e5m2", 5, 2, true};

inline double refDecode(const FormatSpec& spec, uint32_t bits) {
  const int mantBits = spec.mantBits;
  const uint32_t expAll = (1u << spec.expBits) - 1;
  const bool negative = (bits >> (spec.expBits + mantBits)) & 1;
  const uint32_t exp = (bits >> mantBits) & expAll;
  const uint32_t mant = bits & ((1u << mantBits) - 1);
  double value;
  if (spec.ieee && exp == expAll) {
    value =
        mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!spec.ieee && exp == expAll && mant == (1u << mantBits) - 1) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    value = std::ldexp(double(mant), 1 - spec.bias() - mantBits);
  } else {
    value = std::ldexp(double(mant | (1u << mantBits)), int(exp) - spec.bias() - mantBits);
  }
  return negative ? -value : value;
}

}  // namespace trnccl::device::testing
