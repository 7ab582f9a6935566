// Plans cached per communicator by call signature (issue 14): a training loop issues the same
// few calls on the same buffers every step, so the tuner's choice and the built schedule are
// computed once and reused. A hit costs a hash lookup instead of the tuner's estimates and a
// schedule's allocations.
//
// The key is everything of the call a schedule depends on: collective, count, datatype, op,
// root, both buffer addresses (steps point into them; in-place-ness follows from them) and the
// stream. Rank, rank count, slice size, topology and the tuner's overrides TRNCCL_ALGO and
// TRNCCL_NCHANNELS (read once at init, comm::Config::tuning) are the communicator's own; a
// change of the overrides (Communicator::setTuning, for tests) empties the cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "algorithms/algorithm.h"
#include "schedule/schedule.h"

namespace trnccl::comm {

struct PlanKey {
  algorithms::Collective coll = algorithms::Collective::kAllReduce;
  device::DataType type = device::DataType::kFloat32;
  device::RedOp op = device::RedOp::kSum;
  int root = 0;
  bool deterministic = false;  // the communicator's, but cheap to be sure of
  size_t count = 0;
  const void* send = nullptr;
  const void* recv = nullptr;
  const void* stream = nullptr;

  bool operator==(const PlanKey&) const = default;
  // The key of a call.
  static PlanKey of(const algorithms::CollArgs& args, const void* stream);
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const;
};

class PlanCache {
 public:
  // More distinct signatures than this empty the cache (a program that never repeats a call).
  static constexpr size_t kMaxEntries = 256;
  // A cached schedule holds no memory for its scratch: the executor backs a schedule's
  // scratch space only while it runs it (schedule::ScratchMemory).

  // The cached schedule of `key`, or nullptr (counted as a hit or a miss).
  std::shared_ptr<const schedule::Schedule> find(const PlanKey& key);
  // Caches `plan` under `key`; returns it.
  std::shared_ptr<const schedule::Schedule> insert(PlanKey key, schedule::Schedule plan);

  uint64_t hits() const;
  uint64_t misses() const;
  size_t size() const;
  void clear();

 private:
  mutable std::mutex mu_;  // one communicator may be called from several threads
  using Map = std::unordered_map<PlanKey, std::shared_ptr<const schedule::Schedule>, PlanKeyHash>;
  Map plans_;
  Map::value_type* last_ = nullptr;  // the entry found last (a rehash keeps pointers valid)
  uint64_t hits_ = 0, misses_ = 0;   // under mu_: no atomic add per call
};

}  // namespace trnccl::comm
