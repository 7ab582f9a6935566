// Per-process counts of the paths a transport took (a payload copied through a FIFO or read in
// place, a piece sent zero-copy or through a bounce ring, a registration made), so tests can
// tell apart paths that deliver the same bytes. Relaxed atomic increments: cheap enough to stay
// in production builds.
//
// A transport names its events in an enum class whose last enumerator is kCount, and counts
// them in Counters<Event>::process(); tests read differences (tests/support).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace trnccl::transport {

template <typename Event>
class Counters {
 public:
  static constexpr size_t kEvents = static_cast<size_t>(Event::kCount);

  // The one instance of this process.
  static Counters& process() {
    static Counters instance;
    return instance;
  }

  // `n` may be negative for counts that go down again (e.g. live registrations).
  void add(Event event, int64_t n = 1) { at(event).fetch_add(n, std::memory_order_relaxed); }
  int64_t get(Event event) const { return at(event).load(std::memory_order_relaxed); }
  std::array<int64_t, kEvents> snapshot() const {
    std::array<int64_t, kEvents> values{};
    for (size_t i = 0; i < kEvents; ++i) values[i] = counts_[i].load(std::memory_order_relaxed);
    return values;
  }

 private:
  std::atomic<int64_t>& at(Event event) { return counts_[static_cast<size_t>(event)]; }
  const std::atomic<int64_t>& at(Event event) const { return counts_[static_cast<size_t>(event)]; }

  std::array<std::atomic<int64_t>, kEvents> counts_{};
};

}  // namespace trnccl::transport
