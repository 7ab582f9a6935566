// Exhaustive and brute-force checks of the fp16 / bf16 / fp8 conversions against the independent
// reference decoder in reference.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "device/reduce.h"
#include "unit/dtype/reference.h"

namespace trnccl::device {
namespace {

using testing::FormatSpec;
using testing::refDecode;

struct Codec {
  const FormatSpec& spec;
  float (*decode)(uint32_t);
  uint32_t (*encode)(float);
};

const Codec kCodecs[] = {
    {testing::kHalfSpec, [](uint32_t v) { return halfToFloat(uint16_t(v)); },
     [](float f) -> uint32_t { return floatToHalf(f); }},
    {testing::kBf16Spec, [](uint32_t v) { return bfloat16ToFloat(uint16_t(v)); },
     [](float f) -> uint32_t { return floatToBfloat16(f); }},
    {testing::kE4m3Spec, [](uint32_t v) { return fp8e4m3ToFloat(uint8_t(v)); },
     [](float f) -> uint32_t { return floatToFp8e4m3(f); }},
    {testing::kE5m2Spec, [](uint32_t v) { return fp8e5m2ToFloat(uint8_t(v)); },
     [](float f) -> uint32_t { return floatToFp8e5m2(f); }},
};

class ConversionTest : public ::testing::TestWithParam<int> {
 protected:
  const Codec& codec() const { return kCodecs[GetParam()]; }
  const FormatSpec& spec() const { return codec().spec; }
  uint32_t patterns() const { return 1u << spec().totalBits(); }
  uint32_t signBit() const { return 1u << (spec().totalBits() - 1); }
  bool isNaN(uint32_t bits) const { return std::isnan(refDecode(spec(), bits)); }
};

TEST_P(ConversionTest, DecodesEveryPatternExactly) {
  for (uint32_t bits = 0; bits < patterns(); ++bits) {
    const double want = refDecode(spec(), bits);
    const float got = codec().decode(bits);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << bits;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << std::hex << bits;
    } else {
      // Bit equality also distinguishes -0 from +0.
      EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(float(want)))
          << std::hex << bits << " want " << want << " got " << got;
    }
  }
}

TEST_P(ConversionTest, RoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits < patterns(); ++bits) {
    const uint32_t back = codec().encode(codec().decode(bits));
    if (isNaN(bits)) {
      EXPECT_TRUE(isNaN(back)) << std::hex << bits << " -> " << back;
      EXPECT_EQ(back & signBit(), bits & signBit()) << std::hex << bits;
    } else {
      EXPECT_EQ(back, bits) << std::hex << bits;
    }
  }
}

TEST_P(ConversionTest, NaNAndInfinityEncode) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float nan : {std::numeric_limits<float>::quiet_NaN(),
                    -std::numeric_limits<float>::quiet_NaN(), std::bit_cast<float>(0x7f800001u),
                    std::bit_cast<float>(0xffa00001u), std::bit_cast<float>(0x7fffffffu)}) {
    const uint32_t bits = codec().encode(nan);
    EXPECT_TRUE(isNaN(bits)) << std::hex << bits;
    EXPECT_EQ((bits & signBit()) != 0, std::signbit(nan)) << std::hex << bits;
  }
  // IEEE-like formats keep infinities; OCP e4m3 has none and saturates to +-448.
  const double wantInf = spec().ieee ? inf : 448.0;
  EXPECT_EQ(refDecode(spec(), codec().encode(inf)), wantInf);
  EXPECT_EQ(refDecode(spec(), codec().encode(-inf)), -wantInf);
}

// The representable non-negative finite values with their codes, sorted by value.
struct Representable {
  double value;
  uint32_t code;
};

std::vector<Representable> representables(const FormatSpec& spec) {
  std::vector<Representable> table;
  for (uint32_t code = 0; code < (1u << (spec.totalBits() - 1)); ++code) {
    const double v = refDecode(spec, code);
    if (std::isfinite(v)) table.push_back({v, code});
  }
  std::sort(table.begin(), table.end(),
            [](const Representable& a, const Representable& b) { return a.value < b.value; });
  return table;
}

// The code nearest to x >= 0 (ties to the even code); beyond the largest finite value, IEEE
// formats round to inf from max + ulp/2 on and e4m3 saturates.
uint32_t nearestCode(const FormatSpec& spec, const std::vector<Representable>& table, double x) {
  const Representable& max = table.back();
  if (x >= max.value) {
    const double halfUlp = (max.value - table[table.size() - 2].value) / 2;
    if (spec.ieee && x >= max.value + halfUlp) return ((1u << spec.expBits) - 1) << spec.mantBits;
    return max.code;
  }
  auto hi = std::lower_bound(table.begin(), table.end(), x,
                             [](const Representable& r, double v) { return r.value < v; });
  if (hi->value == x) return hi->code;
  const auto lo = hi - 1;
  const double dLo = x - lo->value;
  const double dHi = hi->value - x;
  if (dLo != dHi) return dLo < dHi ? lo->code : hi->code;
  return (lo->code & 1) == 0 ? lo->code : hi->code;
}

void expectNearest(const Codec& codec, const std::vector<Representable>& table, float x) {
  const uint32_t want = nearestCode(codec.spec, table, std::fabs(double(x)));
  const uint32_t sign = std::signbit(x) ? 1u << (codec.spec.totalBits() - 1) : 0;
  ASSERT_EQ(codec.encode(x), want | sign) << std::hexfloat << x << " " << std::hex << want;
}

TEST_P(ConversionTest, EncodesToNearestEvenOnDenseSample) {
  const auto table = representables(spec());
  // Every 997th positive float (all binades, subnormals included) and its negation.
  for (uint64_t bits = 0; bits <= 0x7f800000u; bits += 997) {
    const float x = std::bit_cast<float>(uint32_t(bits));
    expectNearest(codec(), table, x);
    expectNearest(codec(), table, -x);
  }
  // Around every representable value and every midpoint: exact ties and their float neighbours.
  for (size_t i = 0; i + 1 < table.size(); ++i) {
    const float mid = float((table[i].value + table[i + 1].value) / 2);
    ASSERT_EQ(double(mid), (table[i].value + table[i + 1].value) / 2);
    for (float x : {float(table[i].value), mid, std::nextafter(mid, 0.0f),
                    std::nextafter(mid, std::numeric_limits<float>::infinity())}) {
      expectNearest(codec(), table, x);
      expectNearest(codec(), table, -x);
    }
  }
}

TEST_P(ConversionTest, EncodesToNearestEvenOnRandomFloats) {
  const auto table = representables(spec());
  std::mt19937 rng(1234 + GetParam());
  // Every bf16-sized upper half with random low bits, so every binade and mantissa prefix.
  for (uint32_t upper = 0; upper < 0x7f80u; ++upper) {
    const float x = std::bit_cast<float>(uint32_t((upper << 16) | (rng() & 0xffffu)));
    expectNearest(codec(), table, x);
  }
}

std::string codecName(const ::testing::TestParamInfo<int>& info) {
  return kCodecs[info.param].spec.name;
}
INSTANTIATE_TEST_SUITE_P(AllFormats, ConversionTest, ::testing::Range(0, 4), codecName);

float exp2f(int e) { return std::ldexp(1.0f, e); }

TEST(HalfEncode, HandComputedPoints) {
  EXPECT_EQ(floatToHalf(1.0f + exp2f(-11)), 0x3C00);               // tie, 1.0 is even
  EXPECT_EQ(floatToHalf(1.0f + 3 * exp2f(-11)), 0x3C02);           // tie, 1 + 2^-9 is even
  EXPECT_EQ(floatToHalf(1.0f + exp2f(-11) + exp2f(-20)), 0x3C01);  // just above the tie
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);  // tie with the max's odd mantissa -> inf
  EXPECT_EQ(floatToHalf(-1e10f), 0xFC00);
  EXPECT_EQ(floatToHalf(exp2f(-24)), 0x0001);            // min subnormal
  EXPECT_EQ(floatToHalf(exp2f(-25)), 0x0000);            // tie -> 0 (even)
  EXPECT_EQ(floatToHalf(-exp2f(-25)), 0x8000);           // -0 keeps the sign
  EXPECT_EQ(floatToHalf(3 * exp2f(-25)), 0x0002);        // tie between 1 and 2 -> 2
  EXPECT_EQ(floatToHalf(1023.5f * exp2f(-24)), 0x0400);  // largest subnormal rounds to min normal
  EXPECT_EQ(floatToHalf(exp2f(-14)), 0x0400);
}

TEST(Bfloat16Encode, HandComputedPoints) {
  EXPECT_EQ(floatToBfloat16(1.0f + exp2f(-8)), 0x3F80);
  EXPECT_EQ(floatToBfloat16(1.0f + 3 * exp2f(-8)), 0x3F82);
  EXPECT_EQ(floatToBfloat16(std::numeric_limits<float>::max()), 0x7F80);           // rounds to inf
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x7F800001u)) & 0x7FC0, 0x7FC0);  // not inf
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x7FFFFFFFu)), 0x7FFF);  // no carry into sign
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x00008000u)), 0x0000);  // subnormal tie -> even
  EXPECT_EQ(floatToBfloat16(std::bit_cast<float>(0x00018000u)), 0x0002);
}

TEST(Fp8e4m3Encode, HandComputedPoints) {
  EXPECT_EQ(floatToFp8e4m3(1.0f + exp2f(-4)), 0x38);
  EXPECT_EQ(floatToFp8e4m3(1.0f + 3 * exp2f(-4)), 0x3A);
  EXPECT_EQ(floatToFp8e4m3(448.0f), 0x7E);
  EXPECT_EQ(floatToFp8e4m3(464.0f), 0x7E);  // tie would round to 480 (the NaN code): saturate
  EXPECT_EQ(floatToFp8e4m3(1e6f), 0x7E);
  EXPECT_EQ(floatToFp8e4m3(-1e6f), 0xFE);
  EXPECT_EQ(floatToFp8e4m3(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(floatToFp8e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(floatToFp8e4m3(-std::numeric_limits<float>::quiet_NaN()), 0xFF);
  EXPECT_EQ(floatToFp8e4m3(exp2f(-9)), 0x01);
  EXPECT_EQ(floatToFp8e4m3(exp2f(-10)), 0x00);
  EXPECT_EQ(floatToFp8e4m3(3 * exp2f(-10)), 0x02);
  EXPECT_EQ(floatToFp8e4m3(7.5f * exp2f(-9)), 0x08);  // largest subnormal tie -> min normal
}

TEST(Fp8e5m2Encode, HandComputedPoints) {
  EXPECT_EQ(floatToFp8e5m2(1.0f + exp2f(-3)), 0x3C);
  EXPECT_EQ(floatToFp8e5m2(1.0f + 3 * exp2f(-3)), 0x3E);
  EXPECT_EQ(floatToFp8e5m2(57344.0f), 0x7B);
  EXPECT_EQ(floatToFp8e5m2(61439.0f), 0x7B);
  EXPECT_EQ(floatToFp8e5m2(61440.0f), 0x7C);  // tie with the max's odd mantissa -> inf
  EXPECT_EQ(floatToFp8e5m2(-1e6f), 0xFC);
  EXPECT_EQ(floatToFp8e5m2(exp2f(-16)), 0x01);
  EXPECT_EQ(floatToFp8e5m2(exp2f(-17)), 0x00);
  EXPECT_EQ(floatToFp8e5m2(3 * exp2f(-17)), 0x02);
  EXPECT_EQ(floatToFp8e5m2(std::numeric_limits<float>::quiet_NaN()) & 0x7E, 0x7E);
}

}  // namespace
}  // namespace trnccl::device
