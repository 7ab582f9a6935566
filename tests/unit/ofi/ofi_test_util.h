// What only the ofi transport's tests need beyond the shared harness
// (support/transport_harness.h): clusters of ofi, with libfabric's tcp provider pinned to
// loopback.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "support/transport_harness.h"
#include "transports/ofi/ofi_connection.h"
#include "transports/ofi/ofi_transport.h"
#include "transports/ofi/provider.h"

namespace trnccl::transport::ofi::test {

using namespace transport::test;

// libfabric reads FI_TCP_IFACE (FI_NET_IFACE for 1.17's net) once, when it initialises: set
// them before main runs.
inline const bool kLoopbackOnly = [] {
  return ::setenv("FI_TCP_IFACE", "lo", 0) == 0 && ::setenv("FI_NET_IFACE", "lo", 0) == 0;
}();

using Cluster = ClusterOf<makeOfiTransport>;

// The largest message rank 0 and rank 1 of a connected cluster send inside its header (wire.h:
// it depends on the provider).
inline size_t inlineBytesOf(Cluster& cluster) {
  return static_cast<OfiConnection*>(cluster.connTo(0, 1))->inlineBytes();
}

// A suite run once per provider (the parameter, pinned with TRNCCL_OFI_PROVIDER); skips where
// libfabric does not offer it ("net", libfabric 1.17's native tcp RDM provider, is named "tcp"
// from 1.18 on: skipped there).
class PerProvider : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    provider_.emplace("TRNCCL_OFI_PROVIDER", GetParam());
    Result<std::shared_ptr<const fi_info>> list = providerList();
    if (!list) GTEST_SKIP() << list.status().message();
  }

  std::optional<EnvGuard> provider_;
};

}  // namespace trnccl::transport::ofi::test
