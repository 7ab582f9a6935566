#include "comm/plan_cache.h"

#include <functional>

namespace trnccl::comm {
namespace {

void mix(size_t& h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

}  // namespace

PlanKey PlanKey::of(const algorithms::CollArgs& args, const void* stream) {
  PlanKey k;
  k.coll = args.coll;
  k.type = args.type;
  k.op = args.op;
  k.root = args.root;
  k.deterministic = args.deterministic;
  k.count = args.count;
  k.send = args.send;
  k.recv = args.recv;
  k.stream = stream;
  return k;
}

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

std::shared_ptr<const schedule::Schedule> PlanCache::find(const PlanKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  // A loop repeating one call hits the last entry found: no hash, no table walk.
  if (last_ != nullptr && last_->first == key) {
    ++hits_;
    return last_->second;
  }
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  last_ = &*it;
  return it->second;
}

std::shared_ptr<const schedule::Schedule> PlanCache::insert(PlanKey key, schedule::Schedule plan) {
  auto p = std::make_shared<const schedule::Schedule>(std::move(plan));
  std::lock_guard<std::mutex> lock(mu_);
  if (plans_.size() >= kMaxEntries) {
    plans_.clear();
    last_ = nullptr;
  }
  auto [it, added] = plans_.try_emplace(std::move(key), p);
  if (!added) {  // two threads planned the same call: keep the first
    return it->second;
  }
  return p;
}

size_t PlanCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size();
}

void PlanCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  plans_.clear();
  last_ = nullptr;
}

uint64_t PlanCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

uint64_t PlanCache::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

}  // namespace trnccl::comm
