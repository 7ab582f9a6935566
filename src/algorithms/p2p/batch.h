#pragma once

#include <vector>

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::p2p {

struct Op {
  bool send = true;
  int peer = 0;
  void* buf = nullptr;  // const for sends
  size_t count = 0;
  device::DataType type = device::DataType::kInt8;
};

// The point-to-point operations of one group (or one lone trncclSend/trncclRecv) on one rank.
schedule::Schedule batch(const std::vector<Op>& ops, int rank, int nranks);

}  // namespace trnccl::algorithms::p2p
