// The collective tests encode one period of each rank's input and tile it, and check outputs
// against one period of expected values (tests/support/reference.h): that is only sound while
// inputValue really repeats every kInputPeriod elements.
#include <gtest/gtest.h>

#include <vector>

#include "support/reference.h"

namespace trnccl::testing {
namespace {

TEST(ReferencePeriod, InputsRepeatEveryPeriod) {
  for (int o = 0; o < trncclNumOps; ++o) {
    const auto op = static_cast<trncclRedOp_t>(o);
    for (int rank = 0; rank < 64; ++rank) {
      for (size_t i = 0; i < 4 * kInputPeriod; ++i) {
        ASSERT_EQ(inputValue(op, rank, i), inputValue(op, rank, i % kInputPeriod))
            << opName(op) << " rank " << rank << " element " << i;
      }
    }
  }
}

TEST(ReferencePeriod, TiledInputsEqualElementwiseEncoding) {
  for (int t = 0; t < trncclNumTypes; ++t) {
    const auto type = static_cast<trncclDataType_t>(t);
    const size_t elem = typeSize(type), count = 5 * kInputPeriod + 7;
    std::vector<unsigned char> tiled(count * elem), each(count * elem);
    encodeInputs(type, trncclProd, 3, tiled.data(), count);
    for (size_t i = 0; i < count; ++i) encode(type, inputValue(trncclProd, 3, i), &each[i * elem]);
    EXPECT_EQ(tiled, each) << typeName(type);
  }
}

}  // namespace
}  // namespace trnccl::testing
