#include "schedule/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace trnccl::schedule {

const char* primitiveName(Primitive p) {
  switch (p) {
    case Primitive::kSend:
      return "send";
    case Primitive::kRecv:
      return "recv";
    case Primitive::kRecvReduceCopy:
      return "recvReduceCopy";
    case Primitive::kRecvReduceSend:
      return "recvReduceSend";
    case Primitive::kRecvReduceCopySend:
      return "recvReduceCopySend";
    case Primitive::kRecvCopySend:
      return "recvCopySend";
    case Primitive::kCopy:
      return "copy";
    case Primitive::kReduce:
      return "reduce";
  }
  return "?";
}

void Schedule::add(const Step& step) { addGroup({&step, 1}); }

void Schedule::addGroup(std::span<const Step> group) {
  layout_.reset();
  const size_t before = steps_.size();
  for (const Step& st : group) {
    if (st.count == 0) continue;
    steps_.push_back(st);
    steps_.back().withNext = true;
  }
  if (steps_.size() > before) steps_.back().withNext = false;
}

const Layout& Schedule::LayoutCache::keep(std::unique_ptr<Layout> made) const {
  Layout* expected = nullptr;
  if (layout_.compare_exchange_strong(expected, made.get(), std::memory_order_acq_rel)) {
    return *made.release();
  }
  return *expected;  // another thread's, kept first; `made` goes
}

const Layout& Schedule::deriveLayout() const {
  auto made = std::make_unique<Layout>();
  made->messages.resize(steps_.size());
  made->runs.resize(steps_.size());
  // Messages so far per peer, each way (a map: peers are few per schedule, ranks may be many).
  std::unordered_map<int, uint32_t> sent, received;
  for (size_t first = 0; first < steps_.size();) {
    size_t last = first;
    while (last + 1 < steps_.size() && steps_[last].withNext) ++last;
    Layout::Group g;
    g.first = static_cast<uint32_t>(first);
    g.last = static_cast<uint32_t>(last);
    g.peersBegin = static_cast<uint32_t>(made->peers.size());
    for (size_t i = first; i <= last; ++i) {
      const Step& st = steps_[i];
      Layout::Messages& m = made->messages[i];
      if (receives(st.prim)) m.recv = received[st.recvPeer]++;
      if (sends(st.prim)) {
        m.send = sent[st.sendPeer]++;
        if (st.sendPeer2 >= 0) m.send2 = sent[st.sendPeer2]++;
      }
      for (int p : {receives(st.prim) ? st.recvPeer : -1, sends(st.prim) ? st.sendPeer : -1,
                    sends(st.prim) ? st.sendPeer2 : -1}) {
        auto begin = made->peers.begin() + g.peersBegin;
        if (p >= 0 && std::find(begin, made->peers.end(), p) == made->peers.end()) {
          made->peers.push_back(p);
        }
      }
    }
    g.peersEnd = static_cast<uint32_t>(made->peers.size());
    g.sendersBegin = static_cast<uint32_t>(made->senders.size());
    for (size_t i = first; i <= last; ++i) {
      const Step& st = steps_[i];
      Layout::Run& r = made->runs[i];
      r.mapSrc = inScratchSpace(st.src);
      r.mapDst = inScratchSpace(st.dst);
      r.copies = st.prim == Primitive::kRecv || st.prim == Primitive::kRecvCopySend;
      if (!sends(st.prim)) continue;
      for (int p : {st.sendPeer, st.sendPeer2}) {
        auto begin = made->senders.begin() + g.sendersBegin;
        if (p >= 0 && std::find(begin, made->senders.end(), p) == made->senders.end()) {
          made->senders.push_back(p);
        }
      }
    }
    g.sendersEnd = static_cast<uint32_t>(made->senders.size());
    made->groups.push_back(g);
    first = last + 1;
  }
  return layout_.keep(std::move(made));
}

std::byte* Schedule::allocScratch(size_t bytes) {
  constexpr size_t kAlign = 64;
  auto* region = reinterpret_cast<std::byte*>(kScratchBase + scratchBytes_);
  scratchBytes_ += (bytes + kAlign - 1) / kAlign * kAlign;
  return region;
}

ScratchArena::Lease ScratchArena::borrow(size_t bytes) {
  if (bytes == 0 || bytes > maxBytes_ || lent_.exchange(true, std::memory_order_acquire)) {
    return Lease(nullptr, GiveBack{this});
  }
  if (bytes > bytes_) {
    block_.reset();  // the old block first: both never live at once
    block_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
    bytes_ = bytes;
    allocations_.fetch_add(1, std::memory_order_relaxed);
  }
  return Lease(block_.get(), GiveBack{this});
}

void ScratchArena::giveBack() { lent_.store(false, std::memory_order_release); }

size_t ScratchArena::allocations() const { return allocations_.load(std::memory_order_relaxed); }

ScratchMemory::ScratchMemory(size_t bytes, ScratchArena* arena) {
  if (bytes == 0) return;
  if (arena != nullptr) lease_ = arena->borrow(bytes);
  if (lease_ == nullptr) own_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
  base_ = lease_ != nullptr ? lease_.get() : own_.get();
}

std::string Schedule::dump() const {
  std::string out =
      fmt::format("schedule {} type {} op {} nranks {} steps {}\n", algorithm,
                  device::dataTypeName(type), device::redOpName(op), nranks, steps_.size());
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    out += fmt::format("  {:4} {:<18} recv {:>3} send {:>3}{} src {} dst {} count {}{}{}{}{}\n", i,
                       primitiveName(s.prim), s.recvPeer, s.sendPeer,
                       s.sendPeer2 >= 0 ? fmt::format(",{}", s.sendPeer2) : "", s.src, s.dst,
                       s.count, s.postOp ? " postOp" : "", s.incomingFirst ? " incomingFirst" : "",
                       s.syncSend ? " sync" : "", s.withNext ? " +next" : "");
  }
  return out;
}

}  // namespace trnccl::schedule
