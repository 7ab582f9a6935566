// The one mechanism for environment parameters (TRNCCL_*). Values are read when asked for, so
// tests can set them between communicators. Reads and setIfUnset take one process-wide lock:
// glibc's getenv scans the environment array that a setenv on another thread may be moving.
#pragma once

#include <cstdint>
#include <string>

namespace trnccl::env {

std::string getString(const char* name, const std::string& fallback);
int64_t getInt(const char* name, int64_t fallback);
// setenv(name, value, 0) under the same lock: for the few variables trnccl hands to a library
// that reads them itself (libfabric's provider parameters).
void setIfUnset(const char* name, const std::string& value);

}  // namespace trnccl::env
