#include "sim/program.h"

#include <algorithm>

#include "device/reduce.h"

namespace trnccl::sim {
namespace {

using schedule::Primitive;

bool reduces(Primitive p) {
  return p == Primitive::kRecvReduceCopy || p == Primitive::kRecvReduceSend ||
         p == Primitive::kRecvReduceCopySend;
}

uint64_t mix(uint64_t k) {  // splitmix64's finaliser: spreads consecutive keys
  k ^= k >> 30;
  k *= 0xbf58476d1ce4e5b9ULL;
  k ^= k >> 27;
  k *= 0x94d049bb133111ebULL;
  return k ^ (k >> 31);
}

// A transfer's peer must be another rank of the call.
Status checkPeer(int rank, int peer, int nranks, size_t index, Primitive prim) {
  if (peer >= 0 && peer < nranks && peer != rank) return Status::ok();
  return invalidArgument("rank {} step {} ({}): peer {} is {}", rank, index,
                         schedule::primitiveName(prim), peer,
                         peer == rank ? "the rank itself" : "not a rank");
}

// The bytes of memory the steps of `s` read or write locally: the union of their local operands
// (src) and destinations (dst), what the executor's copies and reductions touch.
uint64_t touchedBytes(const schedule::Schedule& s) {
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;
  const uint64_t elem = device::dataTypeSize(s.type);
  for (const schedule::Step& st : s.steps()) {
    const uintptr_t bytes = st.count * elem;
    const bool readsSrc = st.prim != Primitive::kRecv && st.prim != Primitive::kRecvCopySend;
    if (readsSrc && st.src != nullptr) {
      const auto a = reinterpret_cast<uintptr_t>(st.src);
      spans.emplace_back(a, a + bytes);
    }
    if (st.prim != Primitive::kSend && st.dst != nullptr) {
      const auto a = reinterpret_cast<uintptr_t>(st.dst);
      spans.emplace_back(a, a + bytes);
    }
  }
  std::sort(spans.begin(), spans.end());
  uint64_t total = 0;
  uintptr_t covered = 0;  // the union so far ends here
  for (const auto& [a, b] : spans) {
    if (b <= covered) continue;
    total += b - std::max(a, covered);
    covered = b;
  }
  return total;
}

// A table kept by the thread for its next Program: reused memory is mapped already, fresh
// memory the kernel clears page by page first (hundreds of MB of steps at 2,048 ranks).
template <typename V>
V& spare() {
  static thread_local V table;
  return table;
}
template <typename V>
void keep(V& v) {
  if (v.capacity() > spare<V>().capacity()) {
    v.clear();
    spare<V>().swap(v);
  }
}

}  // namespace

Program::Program(const Fabric& fabric)
    : fabric_(fabric),
      first_(static_cast<size_t>(fabric.nranks()), 0),
      count_(static_cast<size_t>(fabric.nranks()), 0) {
  const size_t n = static_cast<size_t>(fabric.nranks());
  steps_.swap(spare<Steps>());
  steps_.clear();
  if (fabric.nranks() <= kDenseRanks) {
    dense_.swap(spare<std::vector<int32_t>>());
    dense_.assign(n * n, 0);
  } else {
    keys_.assign(1024, 0);
    values_.assign(1024, -1);
  }
}

Program::~Program() {
  keep(steps_);
  keep(dense_);
}

uint32_t Program::first(int rank) const { return first_[static_cast<size_t>(rank)]; }
uint32_t Program::end(int rank) const {
  return first_[static_cast<size_t>(rank)] + count_[static_cast<size_t>(rank)];
}

Result<int32_t> Program::connection(int from, int to) {
  const uint64_t key = static_cast<uint64_t>(from) * static_cast<uint64_t>(nranks()) + to;
  int32_t* slot = nullptr;
  if (!dense_.empty()) {
    slot = &dense_[key];
    if (*slot > 0) return *slot - 1;
  } else {
    slot = findSlot(key + 1);
    if (*slot >= 0) return *slot;
  }
  auto route = fabric_.route(from, to);
  if (!route) return route.status();
  const auto id = static_cast<int32_t>(conns_.size());
  conns_.push_back(Connection{from, to, routeId(*route)});
  if (dense_.empty()) {
    *slot = id;
  } else {
    *slot = id + 1;
  }
  return id;
}

// The id of route r in routes_, added when new.
uint32_t Program::routeId(const Route& r) {
  auto hash = [](const Route& x) {
    uint64_t h = static_cast<uint64_t>(x.count);
    for (int32_t i = 0; i < x.count; ++i) h = mix(h * 31 + static_cast<uint32_t>(x.hops[i]));
    return h;
  };
  auto same = [](const Route& x, const Route& y) {
    return x.count == y.count &&
           std::equal(x.hops.begin(), x.hops.begin() + x.count, y.hops.begin());
  };
  if (2 * (routes_.size() + 1) > routeSlots_.size()) {  // at most half full
    routeSlots_.assign(std::max<size_t>(1024, routeSlots_.size() * 2), 0);
    for (size_t id = 0; id < routes_.size(); ++id) {
      size_t j = hash(routes_[id]) & (routeSlots_.size() - 1);
      while (routeSlots_[j] != 0) j = (j + 1) & (routeSlots_.size() - 1);
      routeSlots_[j] = static_cast<uint32_t>(id + 1);
    }
  }
  size_t j = hash(r) & (routeSlots_.size() - 1);
  for (; routeSlots_[j] != 0; j = (j + 1) & (routeSlots_.size() - 1)) {
    if (same(routes_[routeSlots_[j] - 1], r)) return routeSlots_[j] - 1;
  }
  routes_.push_back(r);
  routeSlots_[j] = static_cast<uint32_t>(routes_.size());
  return routeSlots_[j] - 1;
}

// The value slot of `key` in the open-addressing table (claimed for it when new: value -1).
int32_t* Program::findSlot(uint64_t key) {
  if (2 * (used_ + 1) > keys_.size()) {  // keep the table at most half full
    std::vector<uint64_t> keys(keys_.size() * 2, 0);
    std::vector<int32_t> values(keys.size(), -1);
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (keys_[i] == 0) continue;
      size_t j = mix(keys_[i]) & (keys.size() - 1);
      while (keys[j] != 0) j = (j + 1) & (keys.size() - 1);
      keys[j] = keys_[i];
      values[j] = values_[i];
    }
    keys_.swap(keys);
    values_.swap(values);
  }
  size_t j = mix(key) & (keys_.size() - 1);
  while (keys_[j] != 0 && keys_[j] != key) j = (j + 1) & (keys_.size() - 1);
  if (keys_[j] == 0) {
    keys_[j] = key;
    ++used_;
  }
  return &values_[j];
}

Status Program::add(int rank, const schedule::Schedule& s) {
  if (rank < 0 || rank >= nranks())
    return invalidArgument("rank {} not in [0, {})", rank, nranks());
  if (algorithm_.empty()) algorithm_ = s.algorithm;
  if (fabric_.hasBands()) workingSet_ = std::max(workingSet_, touchedBytes(s));
  const uint64_t elem = device::dataTypeSize(s.type);
  if (steps_.empty()) {  // ranks' schedules are about as long as each other: grow once at most
    steps_.reserve(s.steps().size() * static_cast<size_t>(nranks()) * 9 / 8 + 64);
  }
  first_[static_cast<size_t>(rank)] = static_cast<uint32_t>(steps_.size());
  count_[static_cast<size_t>(rank)] = static_cast<uint32_t>(s.steps().size());
  for (const schedule::Step& st : s.steps()) {
    SimStep out;
    out.prim = st.prim;
    out.bytes = st.count * elem;
    if (st.count > kMaxStepBytes / std::max<uint64_t>(elem, 1)) {
      return invalidArgument("rank {} step {}: {} elements of {} bytes exceed {} bytes", rank,
                             &st - s.steps().data(), st.count, elem, kMaxStepBytes);
    }
    if (!st.withNext) out.flags |= SimStep::kLastOfGroup;
    if (reduces(st.prim)) out.flags |= SimStep::kReduces;
    if (st.syncSend) out.flags |= SimStep::kSyncSend;
    if ((st.prim == Primitive::kCopy && st.src != st.dst) || st.prim == Primitive::kReduce) {
      out.flags |= SimStep::kMovesData;
    }
    const size_t index = static_cast<size_t>(&st - s.steps().data());
    if (schedule::receives(st.prim)) {
      TRN_TRY(checkPeer(rank, st.recvPeer, nranks(), index, st.prim));
      auto c = connection(st.recvPeer, rank);
      if (!c) return c.status();
      out.recvConn = *c;
    }
    if (schedule::sends(st.prim)) {
      TRN_TRY(checkPeer(rank, st.sendPeer, nranks(), index, st.prim));
      auto c = connection(rank, st.sendPeer);
      if (!c) return c.status();
      out.sendConn = *c;
      if (st.sendPeer2 >= 0) {
        TRN_TRY(checkPeer(rank, st.sendPeer2, nranks(), index, st.prim));
        auto c2 = connection(rank, st.sendPeer2);
        if (!c2) return c2.status();
        out.sendConn2 = *c2;
        ++sends_;
      }
      ++sends_;
    }
    steps_.push_back(out);
  }
  return Status::ok();
}

}  // namespace trnccl::sim
