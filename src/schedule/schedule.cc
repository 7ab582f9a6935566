#include "schedule/schedule.h"

#include <fmt/format.h>

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
  const size_t before = steps_.size();
  for (const Step& st : group) {
    if (st.count == 0) continue;
    steps_.push_back(st);
    steps_.back().withNext = true;
  }
  if (steps_.size() > before) steps_.back().withNext = false;
}

std::byte* Schedule::allocScratch(size_t bytes) {
  constexpr size_t kAlign = 64;
  auto* region = reinterpret_cast<std::byte*>(kScratchBase + scratchBytes_);
  scratchBytes_ += (bytes + kAlign - 1) / kAlign * kAlign;
  return region;
}

ScratchArena::Lease ScratchArena::borrow(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (lent_ || bytes == 0 || bytes > maxBytes_) return Lease(nullptr, GiveBack{this});
  if (bytes > bytes_) {
    block_.reset();  // the old block first: both never live at once
    block_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
    bytes_ = bytes;
    ++allocations_;
  }
  lent_ = true;
  return Lease(block_.get(), GiveBack{this});
}

void ScratchArena::giveBack() {
  std::lock_guard<std::mutex> lock(mu_);
  lent_ = false;
}

size_t ScratchArena::allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocations_;
}

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
    out += fmt::format("  {:4} {:<18} recv {:>3} send {:>3}{} src {} dst {} count {}{}{}{}\n", i,
                       primitiveName(s.prim), s.recvPeer, s.sendPeer,
                       s.sendPeer2 >= 0 ? fmt::format(",{}", s.sendPeer2) : "", s.src, s.dst,
                       s.count, s.postOp ? " postOp" : "", s.syncSend ? " sync" : "",
                       s.withNext ? " +next" : "");
  }
  return out;
}

}  // namespace trnccl::schedule
