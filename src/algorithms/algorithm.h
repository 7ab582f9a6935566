// What an algorithm sees of one collective call, and the registry entry that names it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "device/reduce.h"
#include "schedule/schedule.h"

namespace trnccl::algorithms {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAlltoAll };
const char* collectiveName(Collective c);

// One call, type-erased (STYLE.md rule 2). Counts are in elements, as the API's.
struct CollArgs {
  Collective coll = Collective::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  device::DataType type = device::DataType::kFloat32;
  device::RedOp op = device::RedOp::kSum;
  int root = 0;
  int rank = 0;
  int nranks = 1;
  // Pipeline slice: the most bytes one rank sends per step before its peer must receive.
  size_t sliceBytes = 256 * 1024;
};

// An entry of the per-collective algorithm table (UCC-style {id, name, description}).
struct Algorithm {
  const char* name;
  const char* description;
  std::function<bool(const CollArgs&)> supports;  // may decline
  std::function<schedule::Schedule(const CollArgs&)> build;
};

}  // namespace trnccl::algorithms
