// InlineFunction (src/common/inline_function.h): captures live in the object, move-only
// captures work, moving transfers them, and each capture is destroyed exactly once.
#include "common/inline_function.h"

#include <gtest/gtest.h>

#include <memory>
#include <utility>

namespace {

using trnccl::InlineFunction;
using Fn = InlineFunction<int(int), 64>;

TEST(InlineFunction, CallsWithItsCaptures) {
  int base = 40;
  Fn f = [base](int x) { return base + x; };
  ASSERT_TRUE(f);
  EXPECT_EQ(f(2), 42);
}

TEST(InlineFunction, EmptyAndReset) {
  Fn f;
  EXPECT_FALSE(f);
  f = [](int x) { return x; };
  EXPECT_TRUE(f);
  f = nullptr;
  EXPECT_FALSE(f);
}

TEST(InlineFunction, MovesAMoveOnlyCaptureAndDestroysItOnce) {
  auto owned = std::make_shared<int>(7);
  std::weak_ptr<int> watch = owned;
  Fn a = [p = std::make_unique<std::shared_ptr<int>>(std::move(owned))](int x) { return **p + x; };
  Fn b = std::move(a);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty, as documented
  EXPECT_EQ(b(1), 8);
  EXPECT_EQ(watch.use_count(), 1);
  Fn c;
  c = std::move(b);
  EXPECT_EQ(c(2), 9);
  EXPECT_EQ(watch.use_count(), 1);
  c = nullptr;
  EXPECT_TRUE(watch.expired());
}

}  // namespace
