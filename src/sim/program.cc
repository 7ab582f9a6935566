#include "sim/program.h"

#include <algorithm>
#include <iterator>
#include <map>

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
bool validPeer(int rank, int peer, int nranks) {
  return peer >= 0 && peer < nranks && peer != rank;
}
Status peerError(int rank, int peer, size_t index, Primitive prim) {
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

// The bytes one rank's steps have written so far in a call (disjoint spans, merged): whether a
// send reads bytes written during the call (SimStep::kFreshSend).
class WrittenSpans {
 public:
  bool overlaps(uintptr_t a, uintptr_t b) const {
    auto it = spans_.upper_bound(a);
    if (it != spans_.begin() && std::prev(it)->second > a) return true;
    return it != spans_.end() && it->first < b;
  }
  void add(uintptr_t a, uintptr_t b) {
    if (a >= b) return;
    auto it = spans_.upper_bound(a);
    if (it != spans_.begin() && std::prev(it)->second >= a) {
      --it;
      a = it->first;
    }
    while (it != spans_.end() && it->first <= b) {
      b = std::max(b, it->second);
      it = spans_.erase(it);
    }
    spans_.emplace(a, b);
  }

 private:
  std::map<uintptr_t, uintptr_t> spans_;  // start -> end
};

// A send is fresh when it forwards what its step receives (and reduces), or reads a source an
// earlier step of the call wrote; what the caller passed in is not (as the benchmark's send
// buffer, written before its calls).
void markFresh(const schedule::Step& st, uint64_t elem, WrittenSpans& written, SimStep& out) {
  const uint64_t bytes = st.count * elem;
  const auto span = [bytes](const void* p) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    return std::pair{a, a + bytes};
  };
  if (schedule::sends(st.prim)) {
    const auto [a, b] = span(st.src);
    if (schedule::receives(st.prim) || (st.src != nullptr && written.overlaps(a, b))) {
      out.flags |= SimStep::kFreshSend;
    }
  }
  const bool writes = st.prim != Primitive::kSend && st.dst != nullptr &&
                      !(st.prim == Primitive::kCopy && st.src == st.dst);
  if (writes) {
    const auto [a, b] = span(st.dst);
    written.add(a, b);
  }
}

}  // namespace

Program::Program(const Fabric& fabric, ProgramTables* tables)
    : fabric_(fabric),
      own_(tables == nullptr ? std::make_unique<ProgramTables>() : nullptr),
      t_(tables == nullptr ? *own_ : *tables),
      first_(static_cast<size_t>(fabric.nranks()), 0),
      count_(static_cast<size_t>(fabric.nranks()), 0),
      readsInPlace_(std::any_of(fabric.resources().begin(), fabric.resources().end(),
                                [](const Resource& r) { return r.inPlaceBytes > 0; })) {
  const size_t n = static_cast<size_t>(fabric.nranks());
  if (t_.fabric != &fabric) {  // another fabric's routes: none of them holds here
    t_.routes.clear();
    t_.routeSlots.clear();
    t_.dense.clear();
    t_.keys.clear();
    t_.values.clear();
    t_.used = 0;
    t_.fabric = &fabric;
  }
  t_.steps.clear();
  t_.conns.clear();
  if (++t_.stamp == 0) {  // wrapped: no pair's connection is this Program's
    for (PairEntry& e : t_.dense) e.stamp = 0;
    for (PairEntry& e : t_.values) e.stamp = 0;
    t_.stamp = 1;
  }
  if (fabric.nranks() <= ProgramTables::kDenseRanks) {
    if (t_.dense.size() != n * n) t_.dense.assign(n * n, PairEntry{});
  } else if (t_.keys.empty()) {
    t_.keys.assign(1024, 0);
    t_.values.assign(1024, PairEntry{});
  }
}

int32_t Program::secondConn(uint32_t step) const {
  auto it = std::lower_bound(seconds_.begin(), seconds_.end(), std::pair{step, INT32_MIN});
  return it != seconds_.end() && it->first == step ? it->second : -1;
}

uint32_t Program::first(int rank) const { return first_[static_cast<size_t>(rank)]; }
uint32_t Program::end(int rank) const {
  return first_[static_cast<size_t>(rank)] + count_[static_cast<size_t>(rank)];
}

// The connection from -> to of this Program, numbered when new, its route found when the pair's
// is not known yet.
Result<int32_t> Program::connection(int from, int to) {
  PairEntry* e = &pair(from, to);
  if (e->stamp == t_.stamp) return e->conn;
  if (e->route == 0) {
    auto route = fabric_.route(from, to);
    if (!route) return route.status();
    const uint32_t id = routeId(*route);
    e = &pair(from, to);  // where it is now (routeId does not move the pairs; to be sure)
    e->route = id + 1;
  }
  e->stamp = t_.stamp;
  e->conn = static_cast<int32_t>(t_.conns.size());
  t_.conns.push_back(Connection{from, to, e->route - 1});
  return e->conn;
}

// A rank's steps name their peers' pairs all over the table (a mesh rank: a column of it):
// fetch those of a later step while this one is compiled.
void Program::prefetchPairs(int rank, const schedule::Step& st) const {
  if (t_.dense.empty()) return;
  const size_t n = static_cast<size_t>(nranks()), r = static_cast<size_t>(rank);
  if (schedule::receives(st.prim) && validPeer(rank, st.recvPeer, nranks())) {
    __builtin_prefetch(&t_.dense[static_cast<size_t>(st.recvPeer) * n + r]);
  }
  if (schedule::sends(st.prim) && validPeer(rank, st.sendPeer, nranks())) {
    __builtin_prefetch(&t_.dense[r * n + static_cast<size_t>(st.sendPeer)]);
  }
}

PairEntry& Program::pair(int from, int to) {
  const uint64_t key = static_cast<uint64_t>(from) * static_cast<uint64_t>(nranks()) + to;
  if (!t_.dense.empty()) return t_.dense[key];
  return hashedPair(key + 1);
}

// The id of route r in the routes, added when new.
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
  std::vector<uint32_t>& slots = t_.routeSlots;
  ProgramTables::Routes& routes = t_.routes;
  if (2 * (routes.size() + 1) > slots.size()) {  // at most half full
    slots.assign(std::max<size_t>(1024, slots.size() * 2), 0);
    for (size_t id = 0; id < routes.size(); ++id) {
      size_t j = hash(routes[id]) & (slots.size() - 1);
      while (slots[j] != 0) j = (j + 1) & (slots.size() - 1);
      slots[j] = static_cast<uint32_t>(id + 1);
    }
  }
  size_t j = hash(r) & (slots.size() - 1);
  for (; slots[j] != 0; j = (j + 1) & (slots.size() - 1)) {
    if (same(routes[slots[j] - 1], r)) return slots[j] - 1;
  }
  routes.push_back(r);
  slots[j] = static_cast<uint32_t>(routes.size());
  return slots[j] - 1;
}

// The entry of `key` in the open-addressing table (claimed for it when new).
PairEntry& Program::hashedPair(uint64_t key) {
  std::vector<uint64_t>& keys = t_.keys;
  std::vector<PairEntry>& values = t_.values;
  if (2 * (t_.used + 1) > keys.size()) {  // keep the table at most half full
    std::vector<uint64_t> k2(keys.size() * 2, 0);
    std::vector<PairEntry> v2(k2.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == 0) continue;
      size_t j = mix(keys[i]) & (k2.size() - 1);
      while (k2[j] != 0) j = (j + 1) & (k2.size() - 1);
      k2[j] = keys[i];
      v2[j] = values[i];
    }
    keys.swap(k2);
    values.swap(v2);
  }
  size_t j = mix(key) & (keys.size() - 1);
  while (keys[j] != 0 && keys[j] != key) j = (j + 1) & (keys.size() - 1);
  if (keys[j] == 0) {
    keys[j] = key;
    ++t_.used;
  }
  return values[j];
}

Status Program::add(int rank, const schedule::Schedule& s) {
  if (rank < 0 || rank >= nranks())
    return invalidArgument("rank {} not in [0, {})", rank, nranks());
  if (algorithm_.empty()) algorithm_ = s.algorithm;
  if (fabric_.hasBands()) workingSet_ = std::max(workingSet_, touchedBytes(s));
  const uint64_t elem = device::dataTypeSize(s.type);
  Steps& steps = t_.steps;
  if (steps.empty()) {  // ranks' schedules are about as long as each other: grow once at most
    const size_t need = s.steps().size() * static_cast<size_t>(nranks()) * 9 / 8 + 64;
    // At least twice the last capacity: address space only, and what a later, larger call
    // would otherwise map afresh (and have cleared) once more.
    if (need > steps.capacity()) steps.reserve(std::max(need, 2 * steps.capacity()));
  }
  WrittenSpans written;  // with in-place links only
  first_[static_cast<size_t>(rank)] = static_cast<uint32_t>(steps.size());
  count_[static_cast<size_t>(rank)] = static_cast<uint32_t>(s.steps().size());
  for (const schedule::Step& st : s.steps()) {
    if (st.count > kMaxStepBytes / std::max<uint64_t>(elem, 1)) {
      return invalidArgument("rank {} step {}: {} elements of {} bytes exceed {} bytes", rank,
                             &st - s.steps().data(), st.count, elem, kMaxStepBytes);
    }
    SimStep out;
    out.primitive = static_cast<uint8_t>(st.prim);
    out.bytes = st.count * elem;
    if (!st.withNext) out.flags |= SimStep::kLastOfGroup;
    if (reduces(st.prim)) out.flags |= SimStep::kReduces;
    if (st.syncSend) out.flags |= SimStep::kSyncSend;
    if ((st.prim == Primitive::kCopy && st.src != st.dst) || st.prim == Primitive::kReduce) {
      out.flags |= SimStep::kMovesData;
    }
    const size_t index = static_cast<size_t>(&st - s.steps().data());
    if (index + kAhead < s.steps().size()) prefetchPairs(rank, s.steps()[index + kAhead]);
    if (schedule::receives(st.prim)) {
      if (!validPeer(rank, st.recvPeer, nranks()))
        return peerError(rank, st.recvPeer, index, st.prim);
      auto c = connection(st.recvPeer, rank);
      if (!c) return c.status();
      out.recvConn = *c;
    }
    if (schedule::sends(st.prim)) {
      if (!validPeer(rank, st.sendPeer, nranks()))
        return peerError(rank, st.sendPeer, index, st.prim);
      auto c = connection(rank, st.sendPeer);
      if (!c) return c.status();
      out.sendConn = *c;
      if (st.sendPeer2 >= 0) {
        if (!validPeer(rank, st.sendPeer2, nranks())) {
          return peerError(rank, st.sendPeer2, index, st.prim);
        }
        auto c2 = connection(rank, st.sendPeer2);
        if (!c2) return c2.status();
        out.flags |= SimStep::kSecondSend;
        seconds_.emplace_back(static_cast<uint32_t>(steps.size()), *c2);
        ++sends_;
      }
      ++sends_;
    }
    if (readsInPlace_) markFresh(st, elem, written, out);
    steps.push_back(out);
  }
  return Status::ok();
}

}  // namespace trnccl::sim
