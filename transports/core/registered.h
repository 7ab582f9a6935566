// The buffers a user registered with a communicator (trncclCommRegister): ranges the user
// promises to keep mapped and unchanged in place until trncclCommDeregister. Transports may
// therefore hand a peer a registered piece in place (shm: a descriptor the receiver reads
// through, whatever the piece's size) or register it with a NIC, instead of copying it
// through their staging buffers.
//
// One table per communicator, written by the API thread, read by the stream worker on every
// piece sent: a lookup with nothing registered is one relaxed load; otherwise a shared lock
// and a walk over the registrations (few: a training job registers its buckets). The ofi
// transport registers a registered host range with the NIC on its first send and keys that
// registration by the id, dropping it once the id is removed (removals(), contains()).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>

namespace trnccl::transport {

class RegisteredMemory {
 public:
  struct Range {
    const std::byte* begin = nullptr;
    size_t bytes = 0;
  };

  // Registers [p, p + bytes) and returns its id: never 0, never reused by this table. The same
  // range may be registered more than once (each registration has its own id).
  uint64_t add(const void* p, size_t bytes);
  // The range of registration `id`, removed; nullopt if `id` is not registered (never was, or
  // already removed).
  std::optional<Range> remove(uint64_t id);
  // Whether one registration covers all of [p, p + bytes).
  bool covers(const void* p, size_t bytes) const { return find(p, bytes).has_value(); }
  // The registration (its id and whole range) covering all of [p, p + bytes), if any; with
  // several, the oldest.
  struct Hit {
    uint64_t id = 0;
    Range range;
  };
  std::optional<Hit> find(const void* p, size_t bytes) const;
  // Whether registration `id` is still live.
  bool contains(uint64_t id) const;
  size_t size() const { return live_.load(std::memory_order_relaxed); }
  // How many registrations were ever removed: a transport that keeps state per registration
  // (a NIC registration of its range) drops the state of removed ones when this moves.
  uint64_t removals() const { return removals_.load(std::memory_order_acquire); }

 private:
  mutable std::shared_mutex mu_;
  std::map<uint64_t, Range> ranges_;   // by id; guarded by mu_
  uint64_t nextId_ = 1;                // guarded by mu_
  std::atomic<size_t> live_{0};        // ranges_.size(), for the lock-free empty case
  std::atomic<uint64_t> removals_{0};  // removed registrations, ever
};

}  // namespace trnccl::transport
