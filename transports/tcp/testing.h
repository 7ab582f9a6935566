// Test hooks of the TCP transport: counters (transports/core/counters.h).
#pragma once

#include "transports/core/counters.h"

namespace trnccl::transport::tcp::testing {

enum class Event {
  kRejectedHandshakes,  // connections to a listener that were closed
  kWrittenInPlace,      // bytes (headers and payload) the socket took straight from the source
  kStaged,              // bytes copied into an outbound ring instead
  kReadInPlace,         // payload bytes read from the socket straight into the destination
  kCongestionSet,       // data sockets given a congestion control (core/congestion.h)
  kCount
};
using Counters = transport::Counters<Event>;
inline Counters& counters() { return Counters::process(); }

}  // namespace trnccl::transport::tcp::testing
