// reduce() and divide() for every type x op against a reference computed element by element in
// the test: integers exactly (with wraparound), float/double exactly, narrow floats as the
// library's RNE encoding of the float result of the reference-decoded operands.
#include "device/reduce.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "unit/dtype/reference.h"

namespace trnccl::device {
namespace {

using Bytes = std::vector<unsigned char>;

template <typename T>
T loadAt(const Bytes& buf, size_t i) {
  T v;
  std::memcpy(&v, buf.data() + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void storeAt(Bytes& buf, size_t i, T v) {
  std::memcpy(buf.data() + i * sizeof(T), &v, sizeof(T));
}

// The documented float semantics: NaN in either operand wins; -0 vs +0 returns b.
template <typename F>
F refFloatOp(RedOp op, F a, F b) {
  switch (op) {
    case RedOp::kSum:
    case RedOp::kAvg:
      return a + b;
    case RedOp::kProd:
      return a * b;
    case RedOp::kMax:
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
      return a > b ? a : b;
    case RedOp::kMin:
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
      return a < b ? a : b;
  }
  return 0;
}

// Wraparound through 64-bit unsigned arithmetic; the conversion back is modular (C++20).
template <typename T>
T refIntOp(RedOp op, T a, T b) {
  switch (op) {
    case RedOp::kSum:
    case RedOp::kAvg:
      return T(uint64_t(a) + uint64_t(b));
    case RedOp::kProd:
      return T(uint64_t(a) * uint64_t(b));
    case RedOp::kMax:
      return a > b ? a : b;
    case RedOp::kMin:
      return a < b ? a : b;
  }
  return 0;
}

const testing::FormatSpec* narrowSpec(DataType type) {
  switch (type) {
    case DataType::kFloat16:
      return &testing::kHalfSpec;
    case DataType::kBfloat16:
      return &testing::kBf16Spec;
    case DataType::kFloat8e4m3:
      return &testing::kE4m3Spec;
    case DataType::kFloat8e5m2:
      return &testing::kE5m2Spec;
    default:
      return nullptr;
  }
}

uint32_t encodeNarrow(DataType type, float f) {
  switch (type) {
    case DataType::kFloat16:
      return floatToHalf(f);
    case DataType::kBfloat16:
      return floatToBfloat16(f);
    case DataType::kFloat8e4m3:
      return floatToFp8e4m3(f);
    default:
      return floatToFp8e5m2(f);
  }
}

uint32_t loadNarrow(DataType type, const Bytes& buf, size_t i) {
  return dataTypeSize(type) == 1 ? loadAt<uint8_t>(buf, i) : loadAt<uint16_t>(buf, i);
}

void storeNarrow(DataType type, Bytes& buf, size_t i, uint32_t v) {
  if (dataTypeSize(type) == 1) {
    storeAt(buf, i, uint8_t(v));
  } else {
    storeAt(buf, i, uint16_t(v));
  }
}

// Reference for the native types, element by element in their own C++ type.
template <typename T>
void refNative(RedOp op, Bytes& out, const Bytes& a, const Bytes& b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const T x = loadAt<T>(a, i), y = loadAt<T>(b, i);
    if constexpr (std::is_integral_v<T>) {
      storeAt(out, i, refIntOp(op, x, y));
    } else {
      storeAt(out, i, refFloatOp(op, x, y));
    }
  }
}

Bytes refReduce(DataType type, RedOp op, const Bytes& a, const Bytes& b, size_t n) {
  Bytes out(n * dataTypeSize(type));
  switch (type) {
    case DataType::kInt8:
      refNative<int8_t>(op, out, a, b, n);
      break;
    case DataType::kUint8:
      refNative<uint8_t>(op, out, a, b, n);
      break;
    case DataType::kInt32:
      refNative<int32_t>(op, out, a, b, n);
      break;
    case DataType::kUint32:
      refNative<uint32_t>(op, out, a, b, n);
      break;
    case DataType::kInt64:
      refNative<int64_t>(op, out, a, b, n);
      break;
    case DataType::kUint64:
      refNative<uint64_t>(op, out, a, b, n);
      break;
    case DataType::kFloat32:
      refNative<float>(op, out, a, b, n);
      break;
    case DataType::kFloat64:
      refNative<double>(op, out, a, b, n);
      break;
    default: {
      const auto& spec = *narrowSpec(type);
      for (size_t i = 0; i < n; ++i) {
        const float x = float(testing::refDecode(spec, loadNarrow(type, a, i)));
        const float y = float(testing::refDecode(spec, loadNarrow(type, b, i)));
        storeNarrow(type, out, i, encodeNarrow(type, refFloatOp(op, x, y)));
      }
    }
  }
  return out;
}

bool isNaNAt(DataType type, const Bytes& buf, size_t i) {
  switch (type) {
    case DataType::kFloat32:
      return std::isnan(loadAt<float>(buf, i));
    case DataType::kFloat64:
      return std::isnan(loadAt<double>(buf, i));
    default: {
      const auto* spec = narrowSpec(type);
      return spec && std::isnan(testing::refDecode(*spec, loadNarrow(type, buf, i)));
    }
  }
}

// Bitwise equality, except that any NaN matches any NaN.
void expectSameElements(DataType type, const Bytes& want, const Bytes& got, size_t n) {
  const size_t size = dataTypeSize(type);
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(want.data() + i * size, got.data() + i * size, size) == 0) continue;
    ASSERT_TRUE(isNaNAt(type, want, i) && isNaNAt(type, got, i))
        << "element " << i << " of " << n << " differs";
  }
}

// Random inputs: raw bits for integers and narrow floats (every pattern is meaningful there);
// float/double mostly moderate normal values, with some raw bit patterns (NaN, inf, subnormal).
Bytes randomInput(DataType type, size_t n, std::mt19937_64& rng) {
  Bytes buf(n * dataTypeSize(type));
  std::normal_distribution<double> normal(0.0, 100.0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t raw = rng();
    const bool useRaw = raw % 8 == 0;
    if (type == DataType::kFloat32) {
      storeAt(buf, i, useRaw ? std::bit_cast<float>(uint32_t(raw >> 32)) : float(normal(rng)));
    } else if (type == DataType::kFloat64) {
      storeAt(buf, i, useRaw ? std::bit_cast<double>(rng()) : normal(rng));
    } else {
      std::memcpy(buf.data() + i * dataTypeSize(type), &raw, dataTypeSize(type));
    }
  }
  return buf;
}

enum class Alias { kNone, kDstIsA, kDstIsB, kAllSame };

class ReduceTest : public ::testing::TestWithParam<std::tuple<int, int>> {
 protected:
  DataType type() const { return DataType(std::get<0>(GetParam())); }
  RedOp op() const { return RedOp(std::get<1>(GetParam())); }

  void check(size_t n, Alias alias) {
    std::mt19937_64 rng(n * 131 + std::get<0>(GetParam()) * 7 + std::get<1>(GetParam()));
    const size_t size = dataTypeSize(type());
    const Bytes a = randomInput(type(), n, rng);
    const Bytes b = alias == Alias::kAllSame ? a : randomInput(type(), n, rng);
    const Bytes want = refReduce(type(), op(), a, b, n);
    // A guard element after the output must survive.
    Bytes dst(size * (n + 1), 0xA5);
    const void *x = a.data(), *y = b.data();
    switch (alias) {
      case Alias::kNone:
        break;
      // n == 0: the inputs are empty and data() may be NULL, which memcpy must not get (UBSan).
      case Alias::kDstIsA:
        if (n > 0) std::memcpy(dst.data(), a.data(), a.size());
        x = dst.data();
        break;
      case Alias::kDstIsB:
        if (n > 0) std::memcpy(dst.data(), b.data(), b.size());
        y = dst.data();
        break;
      case Alias::kAllSame:
        if (n > 0) std::memcpy(dst.data(), a.data(), a.size());
        x = y = dst.data();
        break;
    }
    reduce(type(), op(), dst.data(), x, y, n);
    expectSameElements(type(), want, dst, n);
    for (size_t k = 0; k < size; ++k) ASSERT_EQ(dst[n * size + k], 0xA5) << "wrote past count";
  }
};

TEST_P(ReduceTest, MatchesReference) {
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(33), size_t(1000003)}) {
    for (Alias alias : {Alias::kNone, Alias::kDstIsA, Alias::kDstIsB, Alias::kAllSame}) {
      SCOPED_TRACE("count " + std::to_string(n) + " alias " + std::to_string(int(alias)));
      check(n, alias);
      if (HasFatalFailure()) return;
    }
  }
}

std::string reduceName(const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
  return std::string(dataTypeName(DataType(std::get<0>(info.param)))) + "_" +
         redOpName(RedOp(std::get<1>(info.param)));
}
INSTANTIATE_TEST_SUITE_P(AllTypesOps, ReduceTest,
                         ::testing::Combine(::testing::Range(0, kNumDataTypes),
                                            ::testing::Range(0, kNumRedOps)),
                         reduceName);

// Integers truncate toward zero (in 64 bits, so a divisor wider than the type works); floats
// divide in float (double for double) and narrow floats round that quotient to nearest even.
Bytes refDivide(DataType type, const Bytes& a, size_t n, int d) {
  Bytes out(a.size());
  for (size_t i = 0; i < n; ++i) {
    switch (type) {
      case DataType::kInt8:
        storeAt(out, i, int8_t(loadAt<int8_t>(a, i) / int64_t(d)));
        break;
      case DataType::kUint8:
        storeAt(out, i, uint8_t(loadAt<uint8_t>(a, i) / uint64_t(d)));
        break;
      case DataType::kInt32:
        storeAt(out, i, int32_t(loadAt<int32_t>(a, i) / int64_t(d)));
        break;
      case DataType::kUint32:
        storeAt(out, i, uint32_t(loadAt<uint32_t>(a, i) / uint64_t(d)));
        break;
      case DataType::kInt64:
        storeAt(out, i, loadAt<int64_t>(a, i) / int64_t(d));
        break;
      case DataType::kUint64:
        storeAt(out, i, loadAt<uint64_t>(a, i) / uint64_t(d));
        break;
      case DataType::kFloat32:
        storeAt(out, i, loadAt<float>(a, i) / float(d));
        break;
      case DataType::kFloat64:
        storeAt(out, i, loadAt<double>(a, i) / double(d));
        break;
      default: {
        const float x = float(testing::refDecode(*narrowSpec(type), loadNarrow(type, a, i)));
        storeNarrow(type, out, i, encodeNarrow(type, x / float(d)));
      }
    }
  }
  return out;
}

class DivideTest : public ::testing::TestWithParam<int> {
 protected:
  DataType type() const { return DataType(GetParam()); }
};

TEST_P(DivideTest, MatchesReference) {
  std::mt19937_64 rng(GetParam());
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(100003)}) {
    const Bytes a = randomInput(type(), n, rng);
    for (int d : {1, 2, 3, 7, 200, 1000}) {
      SCOPED_TRACE("count " + std::to_string(n) + " divisor " + std::to_string(d));
      // divisor 1 must copy the bits exactly, NaN payloads included.
      const Bytes want = d == 1 ? a : refDivide(type(), a, n, d);
      Bytes out(a.size());
      divide(type(), out.data(), a.data(), n, d);
      if (d == 1) {
        ASSERT_EQ(out, a);
      } else {
        expectSameElements(type(), want, out, n);
      }
      Bytes inPlace = a;
      divide(type(), inPlace.data(), inPlace.data(), n, d);
      expectSameElements(type(), want, inPlace, n);
    }
  }
}

TEST(DivideSemantics, SignedTruncatesTowardZero) {
  const int8_t in[] = {-7, 7, -128, 127, -1};
  int8_t out[5];
  divide(DataType::kInt8, out, in, 5, 2);
  EXPECT_EQ(std::vector<int8_t>(out, out + 5), (std::vector<int8_t>{-3, 3, -64, 63, 0}));
  divide(DataType::kInt8, out, in, 5, 300);  // divisor wider than int8
  EXPECT_EQ(std::vector<int8_t>(out, out + 5), (std::vector<int8_t>{0, 0, 0, 0, 0}));
}

std::string typeName(const ::testing::TestParamInfo<int>& info) {
  return dataTypeName(DataType(info.param));
}
INSTANTIATE_TEST_SUITE_P(AllTypes, DivideTest, ::testing::Range(0, kNumDataTypes), typeName);

TEST(ReduceSemantics, IntegerWraparound) {
  const int8_t a[] = {127, -128, 100}, b[] = {1, -1, 3};
  int8_t sum[3], prod[3];
  reduce(DataType::kInt8, RedOp::kSum, sum, a, b, 3);
  reduce(DataType::kInt8, RedOp::kProd, prod, a, b, 3);
  EXPECT_EQ(std::vector<int8_t>(sum, sum + 3), (std::vector<int8_t>{-128, 127, 103}));
  EXPECT_EQ(std::vector<int8_t>(prod, prod + 3), (std::vector<int8_t>{127, -128, 44}));
  const int64_t big[] = {std::numeric_limits<int64_t>::max()}, one[] = {1};
  int64_t out[1];
  reduce(DataType::kInt64, RedOp::kSum, out, big, one, 1);
  EXPECT_EQ(out[0], std::numeric_limits<int64_t>::min());
}

TEST(ReduceSemantics, MaxMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float a[] = {nan, 1.0f, nan, -0.0f}, b[] = {1.0f, nan, nan, 0.0f};
  for (RedOp op : {RedOp::kMax, RedOp::kMin}) {
    float out[4];
    reduce(DataType::kFloat32, op, out, a, b, 4);
    EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]) && std::isnan(out[2]));
    EXPECT_FALSE(std::signbit(out[3]));  // -0 vs +0 compare equal: b is returned
  }
  const uint16_t ha[] = {0x7E00, 0x3C00}, hb[] = {0x3C00, 0xFE00};  // half NaN, 1.0
  uint16_t hout[2];
  reduce(DataType::kFloat16, RedOp::kMin, hout, ha, hb, 2);
  EXPECT_TRUE(std::isnan(halfToFloat(hout[0])) && std::isnan(halfToFloat(hout[1])));
}

TEST(ReduceSemantics, NarrowFloatsRoundEveryCall) {
  // 2048 + 1 is a tie in half (spacing 2 there): rounds to even 2048, so summing 1 twice in two
  // calls stays at 2048 while 2048 + 2 is exact.
  uint16_t acc[1] = {floatToHalf(2048.0f)};
  const uint16_t one[1] = {floatToHalf(1.0f)};
  reduce(DataType::kFloat16, RedOp::kSum, acc, acc, one, 1);
  reduce(DataType::kFloat16, RedOp::kSum, acc, one, acc, 1);
  EXPECT_EQ(halfToFloat(acc[0]), 2048.0f);
  uint8_t e4[1] = {floatToFp8e4m3(448.0f)};
  reduce(DataType::kFloat8e4m3, RedOp::kSum, e4, e4, e4, 1);
  EXPECT_EQ(e4[0], 0x7E);  // saturates rather than producing NaN
}

// Every bit pattern against a permuted partner, compared bit for bit (NaN payloads included, but
// for two NaN operands any NaN may win) with the scalar codecs: the vector paths (AVX2, F16C for
// half) must not change any result.
TEST(ReduceSemantics, NarrowKernelsMatchScalarCodecsBitForBit) {
  for (DataType type :
       {DataType::kFloat16, DataType::kBfloat16, DataType::kFloat8e4m3, DataType::kFloat8e5m2}) {
    const size_t n = size_t(1) << (8 * dataTypeSize(type));
    Bytes a(n * dataTypeSize(type)), b(a.size()), out(a.size());
    for (size_t i = 0; i < n; ++i) {
      storeNarrow(type, a, i, uint32_t(i));
      storeNarrow(type, b, i, uint32_t((i * 40503 + 12345) % n));
    }
    for (RedOp op : {RedOp::kSum, RedOp::kProd, RedOp::kMax, RedOp::kMin}) {
      reduce(type, op, out.data(), a.data(), b.data(), n);
      for (size_t i = 0; i < n; ++i) {
        const auto decode = [&](const Bytes& buf) {
          const uint32_t v = loadNarrow(type, buf, i);
          switch (type) {
            case DataType::kFloat16:
              return halfToFloat(uint16_t(v));
            case DataType::kBfloat16:
              return bfloat16ToFloat(uint16_t(v));
            case DataType::kFloat8e4m3:
              return fp8e4m3ToFloat(uint8_t(v));
            default:
              return fp8e5m2ToFloat(uint8_t(v));
          }
        };
        const float x = decode(a), y = decode(b);
        const uint32_t want = encodeNarrow(type, refFloatOp(op, x, y));
        if (std::isnan(x) && std::isnan(y)) {  // which NaN survives is unspecified
          ASSERT_TRUE(isNaNAt(type, out, i)) << dataTypeName(type) << " element " << i;
          continue;
        }
        ASSERT_EQ(loadNarrow(type, out, i), want)
            << dataTypeName(type) << " " << redOpName(op) << " element " << i;
      }
    }
  }
}

TEST(Names, MatchNcclTests) {
  const char* const types[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                               "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int t = 0; t < kNumDataTypes; ++t) {
    EXPECT_STREQ(dataTypeName(DataType(t)), types[t]);
    EXPECT_EQ(dataTypeSize(DataType(t)), sizes[t]);
  }
  const char* const ops[] = {"sum", "prod", "max", "min", "avg"};
  for (int o = 0; o < kNumRedOps; ++o) EXPECT_STREQ(redOpName(RedOp(o)), ops[o]);
}

}  // namespace
}  // namespace trnccl::device
