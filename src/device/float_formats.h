// Inline codecs for the narrow floating formats (fp16, bf16, fp8 e4m3, fp8 e5m2) <-> float.
//
// Every conversion is branch-free integer/float arithmetic followed by selects, so the reduction
// loops in reduce.cc that call them can be auto-vectorised (SSE2 has no variable shifts, so the
// subnormal cases use the classic "add a magic float" trick instead of per-element shifts; it
// relies on the default round-to-nearest-even FP environment, which the library never changes).
// The out-of-line scalar API declared in reduce.h forwards here.
#pragma once

#include <bit>
#include <cstdint>

namespace trnccl::device::formats {

// x if c else y, as mask arithmetic. A plain ?: whose arm holds a float operation is not
// if-converted under GCC's default -ftrapping-math (the operation might trap), which would leave
// every narrow-float loop scalar.
inline uint32_t select(bool c, uint32_t x, uint32_t y) {
  const uint32_t mask = 0u - uint32_t(c);
  return (x & mask) | (y & ~mask);
}

// A binary float with 1 sign bit, kExpBits exponent bits (IEEE bias) and kMantBits mantissa bits,
// stored in the low bits of a uint32_t.
//   kIeee = true:  the all-ones exponent encodes inf (mantissa 0) and NaN; overflow -> inf.
//   kIeee = false: OCP fp8 e4m3 — only S.1111.111 is NaN, no inf; overflow saturates to max.
template <int kExpBits, int kMantBits, bool kIeee>
struct NarrowFloat {
  static constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  static constexpr int kShift = 23 - kMantBits;  // float mantissa bits that do not fit
  static constexpr uint32_t kAbsMask = (1u << (kExpBits + kMantBits)) - 1;
  static constexpr uint32_t kMantMask = (1u << kMantBits) - 1;
  static constexpr uint32_t kExpMask = ((1u << kExpBits) - 1) << kMantBits;
  static constexpr uint32_t kQuietNaN = kIeee ? kExpMask | (1u << (kMantBits - 1)) : kAbsMask;
  static constexpr uint32_t kMaxFinite = kIeee ? kExpMask - 1 : kAbsMask - 1;
  static constexpr uint32_t kOverflow = kIeee ? kExpMask : kMaxFinite;
  static constexpr int kSignShift = 31 - kExpBits - kMantBits;

  static float decode(uint32_t v) {
    const uint32_t abs = v & kAbsMask;
    const uint32_t bits = abs << kShift;
    const uint32_t normal = bits + (uint32_t(127 - kBias) << 23);
    // A subnormal m * 2^(1-bias-M): decode as if normal with exponent 1, i.e. 2^(1-bias)(1+m),
    // then subtract 2^(1-bias) exactly.
    const float minNormal = std::bit_cast<float>(uint32_t(127 - kBias + 1) << 23);
    const uint32_t subnormal =
        std::bit_cast<uint32_t>(std::bit_cast<float>(normal + (1u << 23)) - minNormal);
    const bool special = kIeee ? (abs & kExpMask) == kExpMask : abs == kAbsMask;
    uint32_t out = select((abs & kExpMask) == 0, subnormal, normal);
    out = select(special, bits | 0x7f800000u, out);  // inf keeps mantissa 0, NaN keeps its payload
    return std::bit_cast<float>(out | ((v & ~kAbsMask) << kSignShift));
  }

  static uint32_t encode(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    const uint32_t abs = u & 0x7fffffffu;
    // Normal result: rebias, then round the dropped bits to nearest even; a carry out of the
    // mantissa correctly bumps the exponent (up to the overflow code, clamped below).
    const uint32_t odd = (abs >> kShift) & 1;
    uint32_t normal =
        (abs + (uint32_t(kBias - 127) << 23) + ((1u << (kShift - 1)) - 1) + odd) >> kShift;
    normal = normal > kOverflow ? kOverflow : normal;
    // Subnormal result: adding a float whose ulp is the format's smallest subnormal makes the FPU
    // do the RNE; the result's low bits are the subnormal mantissa (or the min normal code).
    constexpr uint32_t kMagic = uint32_t(127 - kBias + kShift + 1) << 23;
    const uint32_t subnormal =
        std::bit_cast<uint32_t>(std::bit_cast<float>(abs) + std::bit_cast<float>(kMagic)) - kMagic;
    constexpr uint32_t kMinNormal = uint32_t(127 - kBias + 1) << 23;
    uint32_t out = select(abs < kMinNormal, subnormal, normal);
    const uint32_t nan = kIeee ? kQuietNaN | ((abs >> kShift) & kMantMask) : kQuietNaN;
    out = select(abs > 0x7f800000u, nan, out);
    return out | ((u >> 31) << (kExpBits + kMantBits));
  }
};

using Half = NarrowFloat<5, 10, true>;
using Fp8e4m3 = NarrowFloat<4, 3, false>;
using Fp8e5m2 = NarrowFloat<5, 2, true>;

// bf16 is the top half of a float: decoding is a shift, encoding rounds the low 16 bits.
struct Bfloat16 {
  static float decode(uint32_t v) { return std::bit_cast<float>(v << 16); }
  static uint32_t encode(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1)) >> 16;
    // Rounding a NaN could carry into the sign or, with a payload only in the low bits, give inf:
    // keep the high bits and force the quiet bit instead.
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    return select(nan, (u >> 16) | 0x0040u, rounded);
  }
};

}  // namespace trnccl::device::formats
