// What only the ofi transport's tests need beyond the shared harness
// (support/transport_harness.h): clusters of ofi, with libfabric's tcp provider pinned to
// loopback.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

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

// Rank 0 sends `sent` bytes where rank 1 expects `expected` (tag 0x4321), after a first
// exchange of `firstBytes` each way (so that the receiver's slots are posted); rank 1 must fail
// at once with kInternalError naming both sizes, rank 0's send must complete.
inline void expectSizeMismatchFails(Cluster& cluster, size_t firstBytes, size_t sent,
                                    size_t expected) {
  std::vector<std::byte> out(sent), in(expected);
  (void)cluster.runEach([&](int r) -> Status {
    TRN_TRY(exchangeStep(cluster.bell(r), r, 0, firstBytes, cluster.links(r)));
    Connection* c = cluster.connTo(r, 1 - r);
    if (r == 0) {
      TRN_TRY(c->beginSend(0x4321, sent));
      std::vector<SendOp> sends = {{c, out.data(), sent}};
      std::vector<RecvOp> none;
      return drive(cluster.bell(r), sends, none);
    }
    TRN_TRY(c->beginRecv(0x4321, expected));
    std::vector<SendOp> none;
    std::vector<RecvOp> recvs = {{c, in.data(), expected}};
    return drive(cluster.bell(r), none, recvs, Deadline::after(std::chrono::seconds(10)));
  });
  EXPECT_TRUE(cluster.statuses[0].isOk()) << cluster.statuses[0].message();
  const Status& got = cluster.statuses[1];
  EXPECT_EQ(got.code(), Code::kInternalError) << got.message();
  EXPECT_EQ(got.peer(), 0);
  EXPECT_NE(got.message().find(fmt::format("{} bytes, expected", sent)), std::string::npos)
      << got.message();
  EXPECT_NE(got.message().find(fmt::format("{} bytes", expected)), std::string::npos)
      << got.message();
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
