// The one mechanism for environment parameters (TRNCCL_*). Values are read when asked for, so
// tests can set them between communicators.
#pragma once

#include <cstdint>
#include <string>

namespace trnccl::env {

std::string getString(const char* name, const std::string& fallback);
int64_t getInt(const char* name, int64_t fallback);

}  // namespace trnccl::env
