// Test hooks of the TCP transport: counters cheap enough to stay in production builds.
#pragma once

#include <atomic>
#include <cstdint>

namespace trnccl::transport::tcp::testing {

struct Counters {
  std::atomic<uint64_t> rejectedHandshakes{0};  // connections to a listener that were closed
};
Counters& counters();

}  // namespace trnccl::transport::tcp::testing
