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
//
// A hit takes no lock (issue 14: the mutex was ~60 of the ~960 instructions of an 8-byte
// all-reduce's caller): each thread keeps the entries it found last in a small table of its
// own (kRecent slots, by cache and signature), tagged with the cache's generation. clear() (and the
// overflow at kMaxEntries) starts a new generation, so a thread's kept entries no longer
// answer; a find racing a clear returns the plan of before the clear, as a find that took the
// lock just before it would have. Generations are unique across all caches of the process, so
// an entry of a destroyed communicator never answers for a new one at the same address.
#pragma once

#include <atomic>
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
  static PlanKey of(const algorithms::CollArgs& args, const void* stream) {
    return {args.coll,  args.type, args.op,   args.root, args.deterministic,
            args.count, args.send, args.recv, stream};
  }
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const;
};

class PlanCache {
 public:
  PlanCache();
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  // More distinct signatures than this empty the cache (a program that never repeats a call).
  static constexpr size_t kMaxEntries = 256;
  // A cached schedule holds no memory for its scratch: the executor backs a schedule's
  // scratch space only while it runs it (schedule::ScratchMemory).

  // Entries a thread keeps, by cache and signature (direct-mapped): a thread repeating a few
  // calls on a few communicators finds each without the lock, as long as they fall in
  // different slots.
  static constexpr size_t kRecent = 16;

  // The cached schedule of `key`, or nullptr (counted as a hit or a miss). Thread-safe.
  std::shared_ptr<const schedule::Schedule> find(const PlanKey& key);
  // Caches `plan` under `key`; returns it (the calling thread then finds it without the lock).
  std::shared_ptr<const schedule::Schedule> insert(PlanKey key, schedule::Schedule plan);

  uint64_t hits() const;
  uint64_t misses() const;
  size_t size() const;
  // Empties the cache; no thread finds a plan of before in it afterwards.
  void clear();

 private:
  // The calling thread's slot for `key` of this cache (a few instructions: no full hash).
  size_t slotOf(const PlanKey& key) const {
    return (serial_ + (reinterpret_cast<uintptr_t>(key.send) >> 4) +
            (reinterpret_cast<uintptr_t>(key.recv) >> 5) + key.count) %
           kRecent;
  }
  // Under mu_: the calling thread keeps `plan` as its entry of `key` in this cache.
  void keep(const PlanKey& key, const std::shared_ptr<const schedule::Schedule>& plan);
  // Under mu_: empties the table and starts a new generation.
  void clearLocked();

  const uint64_t serial_;  // spreads the caches over the thread's slots
  // The generation a thread's kept entry must carry to answer (written under mu_).
  std::atomic<uint64_t> generation_;
  std::atomic<uint64_t> hits_{0}, misses_{0};  // relaxed
  mutable std::mutex mu_;  // one communicator may be called from several threads
  using Map = std::unordered_map<PlanKey, std::shared_ptr<const schedule::Schedule>, PlanKeyHash>;
  Map plans_;
};

}  // namespace trnccl::comm
