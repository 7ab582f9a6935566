// What only the shm transport's tests need beyond the shared harness
// (support/transport_harness.h): clusters and ranks of shm, and the names a communicator left
// in /dev/shm.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "support/transport_harness.h"
#include "transports/shm/shm_transport.h"

namespace trnccl::transport::shm::test {

using namespace transport::test;

using Cluster = ClusterOf<makeShmTransport>;
using Rank = RankOf<makeShmTransport>;

// Names in /dev/shm that belong to the communicator `commHash`.
inline std::vector<std::string> leftoverSegments(uint64_t commHash) {
  std::string prefix = fmt::format("trnccl-{:016x}-", commHash);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

}  // namespace trnccl::transport::shm::test
