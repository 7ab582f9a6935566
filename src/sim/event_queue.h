// The engine's event queue: a radix heap, for keys that never fall below the last one taken,
// as event times never do (an event is always at or after the one that scheduled it). Push is
// O(1); an event moves to a lower bucket at most 64 times, so popping costs O(log of the key
// range) amortised, far less than a binary heap's sift at the tens of thousands of events a
// large fabric has pending.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

namespace trnccl::sim {

struct Event {
  uint64_t key;  // the time's bits: for times >= 0 they order as the times do
  uint32_t id;   // rank (kBegin) or message (kForward)
  uint32_t kind;
  double time() const { return std::bit_cast<double>(key); }
};

class EventQueue {
 public:
  bool empty() const { return size_ == 0; }
  // Empty, keeping the buckets' memory (a large run has millions of events pending).
  void clear() {
    for (std::vector<Event>& b : buckets_) b.clear();
    last_ = 0;
    size_ = 0;
  }
  void push(double t, uint32_t id, uint32_t kind) {
    const uint64_t key = std::bit_cast<uint64_t>(std::max(t, last()));
    buckets_[bucket(key)].push_back(Event{key, id, kind});
    ++size_;
  }
  // An event that pops `depth` pops after the next one, or sooner when fewer are known (those
  // at the key last taken, in the order pop() returns them); null when none is. A hint for
  // prefetching only: an event pushed meanwhile at that key pops first.
  const Event* peek(size_t depth) const {
    const std::vector<Event>& now = buckets_[0];
    if (now.empty()) return nullptr;
    return &now[now.size() - 1 - std::min(depth, now.size() - 1)];
  }
  Event pop() {
    if (buckets_[0].empty()) {
      size_t i = 1;
      while (buckets_[i].empty()) ++i;
      uint64_t least = buckets_[i].front().key;
      for (const Event& e : buckets_[i]) least = std::min(least, e.key);
      last_ = least;
      for (const Event& e : buckets_[i]) buckets_[bucket(e.key)].push_back(e);
      buckets_[i].clear();
    }
    const Event e = buckets_[0].back();
    buckets_[0].pop_back();
    --size_;
    return e;
  }

 private:
  double last() const { return std::bit_cast<double>(last_); }
  size_t bucket(uint64_t key) const {
    return key == last_ ? 0 : 64 - static_cast<size_t>(std::countl_zero(key ^ last_));
  }
  std::array<std::vector<Event>, 65> buckets_;
  uint64_t last_ = 0;
  size_t size_ = 0;
};

}  // namespace trnccl::sim
