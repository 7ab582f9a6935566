// env::: reads on several threads while another thread adds variables (setIfUnset) never see
// a half-moved environment. glibc's getenv scans the environment array without a lock, and
// each new variable can reallocate that array: without env's lock this crashes or reads freed
// memory (under ASan, reliably).
#include "common/env.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace trnccl {
namespace {

TEST(Env, ReadsWhileAnotherThreadAddsVariables) {
  ::setenv("TRNCCL_ENV_TEST_PRESENT", "42", 1);
  std::atomic<bool> stop{false};
  std::atomic<long> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        if (env::getInt("TRNCCL_ENV_TEST_PRESENT", -1) != 42) wrong.fetch_add(1);
        if (env::getString("TRNCCL_ENV_TEST_ABSENT", "x") != "x") wrong.fetch_add(1);
      }
    });
  }
  // Enough new names to grow the environment array several times over.
  for (int i = 0; i < 4000; ++i) {
    const std::string name = "TRNCCL_ENV_TEST_" + std::to_string(i);
    env::setIfUnset(name.c_str(), std::to_string(i));
  }
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(env::getInt("TRNCCL_ENV_TEST_3999", -1), 3999);
  env::setIfUnset("TRNCCL_ENV_TEST_3999", "7");  // set already: left alone
  EXPECT_EQ(env::getInt("TRNCCL_ENV_TEST_3999", -1), 3999);
  for (int i = 0; i < 4000; ++i) ::unsetenv(("TRNCCL_ENV_TEST_" + std::to_string(i)).c_str());
  ::unsetenv("TRNCCL_ENV_TEST_PRESENT");
}

}  // namespace
}  // namespace trnccl
