// The one harness of the transport unit tests (tests/unit/shm, tcp, ofi). What stays in
// tests/unit/<transport> is only what is specific to that transport.
//  - support/transport/oob.h: out-of-band allGather among threads, or two processes
//  - support/transport/cluster.h: a rank (doorbell, transport, SetupContext incl. the
//    MemoryLocator) and N ranks as threads that connect collectively
//  - support/transport/transfer.h: the executor-like poll loop, test data, exchange steps
//  - here: a scoped environment variable, and what tests read to tell paths and leaks apart
//    (counter differences, /proc/self entries)
#pragma once

#include <dirent.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "support/transport/cluster.h"
#include "support/transport/oob.h"
#include "support/transport/transfer.h"
#include "transports/core/counters.h"

namespace trnccl::transport::test {

// Scoped environment variable.
class EnvGuard {
 public:
  EnvGuard(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value.c_str(), 1);
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;
  ~EnvGuard() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// How much a transport's counters (transports/core/counters.h) moved since construction; they
// are per process and cumulative.
template <typename Event>
class CounterDelta {
 public:
  CounterDelta() : start_(Counters<Event>::process().snapshot()) {}
  int64_t get(Event event) const {
    return Counters<Event>::process().get(event) - start_[static_cast<size_t>(event)];
  }

 private:
  std::array<int64_t, Counters<Event>::kEvents> start_;
};

// Entries of a /proc/self directory ("fd", "task"): what a transport left open or running.
inline size_t countEntries(const char* dir) {
  size_t n = 0;
  if (DIR* d = ::opendir(dir)) {
    while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

}  // namespace trnccl::transport::test
