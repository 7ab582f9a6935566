#include "common/env.h"

#include <cstdlib>

#include "common/log.h"

namespace trnccl::env {

std::string getString(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : fallback;
}

int64_t getInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  long long parsed = std::strtoll(v, &end, 0);
  if (end == v || *end != '\0') {
    TRN_WARN(kEnv, "ignoring {}={}: not an integer", name, v);
    return fallback;
  }
  return parsed;
}

}  // namespace trnccl::env
