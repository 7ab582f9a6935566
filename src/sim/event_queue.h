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
    filled_ = 0;
  }
  void push(double t, uint32_t id, uint32_t kind) {
    const uint64_t key = std::bit_cast<uint64_t>(std::max(t, last()));
    const size_t b = bucket(key);
    buckets_[b].push_back(Event{key, id, kind});
    if (b > 0) filled_ |= uint64_t{1} << (b - 1);
    ++size_;
  }
  // An event that pops about `depth` pops after the next one (a hint for prefetching only).
  // Those at the key last taken pop first, from the back of bucket 0 (unless one is pushed
  // meanwhile); then those of the lowest bucket above, in an order known only once it is split:
  // when it holds a few, any of them pops soon. Null when none is known.
  const Event* peek(size_t depth) const {
    const std::vector<Event>& now = buckets_[0];
    if (depth < now.size()) return &now[now.size() - 1 - depth];
    if (filled_ != 0) {
      const std::vector<Event>& next = buckets_[1 + std::countr_zero(filled_)];
      if (next.size() <= kFewNext) return &next[std::min(depth - now.size(), next.size() - 1)];
    }
    return now.empty() ? nullptr : &now.front();
  }
  Event pop() {
    if (buckets_[0].empty()) {
      const size_t i = 1 + static_cast<size_t>(std::countr_zero(filled_));
      filled_ &= ~(uint64_t{1} << (i - 1));
      uint64_t least = buckets_[i].front().key;
      for (const Event& e : buckets_[i]) least = std::min(least, e.key);
      last_ = least;
      for (const Event& e : buckets_[i]) {
        const size_t b = bucket(e.key);
        buckets_[b].push_back(e);
        if (b > 0) filled_ |= uint64_t{1} << (b - 1);
      }
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
  static constexpr size_t kFewNext = 16;
  std::array<std::vector<Event>, 65> buckets_;
  uint64_t last_ = 0;
  size_t size_ = 0;
  uint64_t filled_ = 0;  // bit b - 1: bucket b > 0 holds events
};

}  // namespace trnccl::sim
