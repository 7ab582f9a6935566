#include "comm/plan_cache.h"

#include <functional>
#include <memory>

namespace trnccl::comm {
namespace {

void mix(size_t& h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

// Generations and serial numbers of every cache of the process (never 0: a slot never filled
// carries generation 0).
std::atomic<uint64_t> nextGeneration{1};
std::atomic<uint64_t> nextSerial{0};

// A thread's entry of one cache: the plan it found last there, valid while the cache is still
// in `generation`.
struct Kept {
  uint64_t generation = 0;
  uint64_t serial = 0;  // of the cache
  PlanKey key;
  std::shared_ptr<const schedule::Schedule> plan;
};
// The thread's slots, allocated when it first keeps an entry. A pointer, not the array: a
// thread_local of a trivial type is read without the lazy-initialisation guard (one
// __tls_get_addr instead of two per access). `owner` frees them at thread exit.
thread_local Kept* kept = nullptr;
struct KeptOwner {
  std::unique_ptr<Kept[]> slots;
  ~KeptOwner() { kept = nullptr; }
};
thread_local KeptOwner owner;

Kept& slot(size_t index) {
  if (kept == nullptr) {
    owner.slots = std::make_unique<Kept[]>(PlanCache::kRecent);
    kept = owner.slots.get();
  }
  return kept[index];
}

}  // namespace

size_t PlanKeyHash::operator()(const PlanKey& k) const {
  size_t h = std::hash<size_t>{}(k.count);
  mix(h, static_cast<size_t>(k.coll) | static_cast<size_t>(k.type) << 8 |
             static_cast<size_t>(k.op) << 16);
  mix(h, static_cast<size_t>(k.root) << 1 | static_cast<size_t>(k.deterministic));
  mix(h, std::hash<const void*>{}(k.send));
  mix(h, std::hash<const void*>{}(k.recv));
  mix(h, std::hash<const void*>{}(k.stream));
  return h;
}

PlanCache::PlanCache()
    : serial_(nextSerial.fetch_add(1, std::memory_order_relaxed)),
      generation_(nextGeneration.fetch_add(1, std::memory_order_relaxed)) {}

std::shared_ptr<const schedule::Schedule> PlanCache::find(const PlanKey& key) {
  // A loop repeating its calls hits its thread's kept entries: no lock, no hash, no table walk.
  // Acquire: a generation read after a clear() is the new one (clear stores it under mu_).
  if (Kept* slots = kept; slots != nullptr) {
    const Kept& mine = slots[slotOf(key)];
    if (mine.generation == generation_.load(std::memory_order_acquire) && mine.key == key) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return mine.plan;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  keep(key, it->second);
  return it->second;
}

std::shared_ptr<const schedule::Schedule> PlanCache::insert(PlanKey key, schedule::Schedule plan) {
  auto p = std::make_shared<const schedule::Schedule>(std::move(plan));
  std::lock_guard<std::mutex> lock(mu_);
  if (plans_.size() >= kMaxEntries) clearLocked();
  auto [it, added] = plans_.try_emplace(std::move(key), p);
  // Two threads planned the same call: keep the first.
  keep(it->first, it->second);
  return it->second;
}

void PlanCache::keep(const PlanKey& key, const std::shared_ptr<const schedule::Schedule>& plan) {
  Kept& mine = slot(slotOf(key));
  mine.generation = generation_.load(std::memory_order_relaxed);  // stable under mu_
  mine.serial = serial_;
  mine.key = key;
  mine.plan = plan;
}

void PlanCache::clearLocked() {
  plans_.clear();
  // Threads' kept entries carry the old generation: they miss from now on (and release their
  // plan when next replaced, or at thread exit).
  generation_.store(nextGeneration.fetch_add(1, std::memory_order_relaxed),
                    std::memory_order_release);
}

size_t PlanCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size();
}

void PlanCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  clearLocked();
  // The calling thread's kept plans of this cache go now (one may hold the last reference).
  if (kept != nullptr) {
    for (size_t i = 0; i < kRecent; ++i) {
      if (kept[i].plan != nullptr && kept[i].serial == serial_) kept[i] = Kept{};
    }
  }
}

uint64_t PlanCache::hits() const { return hits_.load(std::memory_order_relaxed); }

uint64_t PlanCache::misses() const { return misses_.load(std::memory_order_relaxed); }

}  // namespace trnccl::comm
