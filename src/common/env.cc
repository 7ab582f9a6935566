#include "common/env.h"

#include <cstdlib>
#include <mutex>

#include "common/log.h"

namespace trnccl::env {
namespace {

std::mutex& lock() {
  static std::mutex* m = new std::mutex();  // never destroyed: read from static destructors
  return *m;
}

// The variable's value, copied under the lock; empty when unset.
std::string read(const char* name) {
  std::lock_guard guard(lock());
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

}  // namespace

std::string getString(const char* name, const std::string& fallback) {
  std::string v = read(name);
  return v.empty() ? fallback : v;
}

void setIfUnset(const char* name, const std::string& value) {
  std::lock_guard guard(lock());
  ::setenv(name, value.c_str(), 0);
}

int64_t getInt(const char* name, int64_t fallback) {
  const std::string value = read(name);
  if (value.empty()) return fallback;
  const char* v = value.c_str();
  char* end = nullptr;
  long long parsed = std::strtoll(v, &end, 0);
  if (end == v || *end != '\0') {
    TRN_WARN(kEnv, "ignoring {}={}: not an integer", name, v);
    return fallback;
  }
  return parsed;
}

}  // namespace trnccl::env
