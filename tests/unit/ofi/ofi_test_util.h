// What only the ofi transport's tests need beyond the shared harness
// (support/transport_harness.h): clusters of ofi, with libfabric's tcp provider pinned to
// loopback.
#pragma once

#include <cstdlib>

#include "support/transport_harness.h"
#include "transports/ofi/ofi_transport.h"
#include "transports/ofi/provider.h"

namespace trnccl::transport::ofi::test {

using namespace transport::test;

// libfabric reads FI_TCP_IFACE once, when it initialises: set it before main runs.
inline const bool kLoopbackOnly = [] { return ::setenv("FI_TCP_IFACE", "lo", 0) == 0; }();

using Cluster = ClusterOf<makeOfiTransport>;

}  // namespace trnccl::transport::ofi::test
