// What only the TCP transport's tests need beyond the shared harness
// (support/transport_harness.h): clusters of tcp, listening on loopback only.
#pragma once

#include <cstdlib>

#include "support/transport_harness.h"
#include "transports/tcp/tcp_transport.h"

namespace trnccl::transport::tcp::test {

using namespace transport::test;

// Tests listen on loopback only, whatever else this machine has (set before main runs).
inline const bool kLoopbackOnly = [] { return ::setenv("TRNCCL_SOCKET_IFNAME", "=lo", 1) == 0; }();

using Cluster = ClusterOf<makeTcpTransport>;

}  // namespace trnccl::transport::tcp::test
