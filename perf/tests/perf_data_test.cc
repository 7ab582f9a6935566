// Unit tests of the benchmark data model: every type's input encodings are exact, and the
// expected values of each reduction match the inputs (including narrow floats and integer wrap).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/data.h"

namespace trnccl::perf {
namespace {

TEST(PerfData, InputsAreExactInEveryType) {
  for (trncclDataType_t type : kAllTypes) {
    for (trncclRedOp_t op : kAllOps) {
      const DataKey key{type, op, 5, 3};
      for (int rank = 0; rank < 5; ++rank) {
        for (size_t i = 0; i < 200; ++i) {
          const double v = inputValue(key, rank, i);
          unsigned char buf[8];
          encodeValue(type, v, buf);
          ASSERT_EQ(decodeValue(type, buf), v) << typeInfo(type).name << " " << opName(op);
          if (!typeInfo(type).isSigned) {
            ASSERT_GE(v, 0);
          }
        }
      }
    }
  }
}

TEST(PerfData, NarrowFloatEncodings) {
  unsigned char b[2];
  encodeValue(trncclFloat16, 1.0, b);
  EXPECT_EQ(b[0] | b[1] << 8, 0x3c00);
  encodeValue(trncclBfloat16, -2.0, b);
  EXPECT_EQ(b[0] | b[1] << 8, 0xc000);
  encodeValue(trncclFloat8e4m3, 448.0, b);
  EXPECT_EQ(b[0], 0x7e);
  encodeValue(trncclFloat8e4m3, 1e6, b);  // saturates, no inf in e4m3
  EXPECT_EQ(b[0], 0x7e);
  encodeValue(trncclFloat8e5m2, 1e6, b);  // IEEE-like: inf
  EXPECT_EQ(b[0], 0x7c);
  encodeValue(trncclFloat8e5m2, 1.25, b);  // 1.01b: 0 01111 01
  EXPECT_EQ(b[0], 0x3d);
  b[0] = 0x01;  // smallest e4m3 subnormal 2^-9
  EXPECT_EQ(decodeValue(trncclFloat8e4m3, b), std::ldexp(1.0, -9));
  b[0] = 0x7f;
  EXPECT_TRUE(std::isnan(decodeValue(trncclFloat8e4m3, b)));
  encodeValue(trncclFloat16, 1.0 + std::ldexp(1.0, -11), b);  // tie: rounds to even (1.0)
  EXPECT_EQ(b[0] | b[1] << 8, 0x3c00);
}

TEST(PerfData, ReducedValuesMatchTheInputs) {
  for (trncclDataType_t type : kAllTypes) {
    for (trncclRedOp_t op : kAllOps) {
      const DataKey key{type, op, 4, 1};
      for (size_t i = 0; i < 100; ++i) {
        std::vector<double> in;
        for (int r = 0; r < 4; ++r) in.push_back(inputValue(key, r, i));
        const Expect e = reducedValue(key, i);
        double want = 0;
        switch (op) {
          case trncclSum:
            want = in[0] + in[1] + in[2] + in[3];
            break;
          case trncclProd:
            want = in[0] * in[1] * in[2] * in[3];
            break;
          case trncclMax:
            want = std::max(std::max(in[0], in[1]), std::max(in[2], in[3]));
            break;
          case trncclMin:
            want = std::min(std::min(in[0], in[1]), std::min(in[2], in[3]));
            break;
          default:
            want = in[0] + in[1] + in[2] + in[3];
            want = typeInfo(type).isFloat ? want / 4 : std::trunc(want / 4);
        }
        // 4 ranks: no integer type overflows with this data.
        ASSERT_NEAR(e.value, want, 1e-12) << typeInfo(type).name << " " << opName(op);
        if (!typeInfo(type).isFloat || op == trncclMax || op == trncclMin) {
          ASSERT_EQ(e.tolerance, 0);
        }
      }
    }
  }
}

TEST(PerfData, SmallFloatSumsAreCheckedExactly) {
  // Up to 4 ranks every partial sum is representable even in fp8 e5m2: no tolerance at all.
  for (trncclDataType_t type : kAllTypes) {
    const DataKey key{type, trncclSum, 4, 2};
    for (size_t i = 0; i < 100; ++i) ASSERT_EQ(reducedValue(key, i).tolerance, 0);
  }
  // 64 ranks of e4m3 may round: the bound is (n-1) * eps/2 * sum|x|.
  const DataKey big{trncclFloat8e4m3, trncclSum, 64, 0};
  double sumAbs = 0;
  for (int r = 0; r < 64; ++r) sumAbs += std::fabs(inputValue(big, r, 3));
  const double tol = sumAbs > 8 ? 63 * 0x1p-4 * sumAbs : 0;
  EXPECT_DOUBLE_EQ(reducedValue(big, 3).tolerance, tol);
}

TEST(PerfData, IntegerSumsWrapLikeTheType) {
  // 200 ranks of uint8 values up to 4 overflow 255: the expected value wraps modulo 256.
  const DataKey key{trncclUint8, trncclSum, 200, 0};
  uint64_t sum = 0;
  for (int r = 0; r < 200; ++r) sum += uint64_t(inputValue(key, r, 7));
  EXPECT_EQ(reducedValue(key, 7).value, double(sum % 256));
}

}  // namespace
}  // namespace trnccl::perf
