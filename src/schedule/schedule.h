// A schedule: this rank's program for one collective call, as data (DESIGN.md, "One call").
//
// Algorithms emit schedules over a small primitive vocabulary on (peer, buffer region) pairs;
// the executor runs them over the transports. A schedule never names a transport, so the same
// schedule could be dumped (TRNCCL_DEBUG=TRACE, TRNCCL_DEBUG_SUBSYS=SCHED) or simulated.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/reduce.h"

namespace trnccl::schedule {

enum class Primitive {
  kSend,                // send src to sendPeer
  kRecv,                // dst = incoming from recvPeer
  kRecvReduceCopy,      // dst = src (op) incoming
  kRecvReduceSend,      // dst = src (op) incoming, forwarded to sendPeer (dst is scratch)
  kRecvReduceCopySend,  // dst = src (op) incoming, kept and forwarded to sendPeer
  kRecvCopySend,        // dst = incoming, kept and forwarded to sendPeer
  kCopy,                // dst = src, locally
  kReduce,              // dst = dst (op) src, locally (a rank's own operand in a reduction chain)
};

const char* primitiveName(Primitive p);

// True for primitives that receive, and that send, respectively (inline: the executor asks
// per step and per poll).
inline bool receives(Primitive p) {
  return p != Primitive::kSend && p != Primitive::kCopy && p != Primitive::kReduce;
}
inline bool sends(Primitive p) {
  return p == Primitive::kSend || p == Primitive::kRecvReduceSend ||
         p == Primitive::kRecvReduceCopySend || p == Primitive::kRecvCopySend;
}

struct Step {
  Primitive prim = Primitive::kCopy;
  int recvPeer = -1;
  int sendPeer = -1;
  // Write duplication (the DMA engine's one read, two writes): a sending primitive also forwards
  // the same bytes to sendPeer2, as they are produced. -1: one destination.
  int sendPeer2 = -1;
  const void* src = nullptr;  // local operand: what kSend sends, what reductions combine with
  void* dst = nullptr;        // where results land; what *Send primitives forward
  size_t count = 0;           // elements
  bool postOp = false;        // after reducing, divide by the rank count (trncclAvg)
  // Reductions of what arrives take it as the first operand: dst = incoming (op) src, so a
  // fold in rank order can receive a lower rank's operand into its own (a 2-rank oneshot's
  // one step). Ops like max of a NaN are not commutative bit for bit.
  bool incomingFirst = false;
  // The step is over only when the peer no longer needs the sent bytes, so that a later step
  // may overwrite them (a chain reusing its scratch).
  bool syncSend = false;
  // Run together with the next step (their transfers progress concurrently): the steps of
  // one group, e.g. the send/recv pairs of a pairwise exchange. Set only by Schedule::addGroup;
  // whatever a caller puts here is overwritten when the step is added.
  bool withNext = false;
};

// What the executor derives from a schedule's steps, once per schedule rather than per call
// (issue 14: a cached plan runs thousands of times): where each group begins and ends, the
// distinct peers each group waits for, and each step's message numbers on its connections
// within the call (a connection carries its messages in order; the tag names the number).
struct Layout {
  struct Group {
    uint32_t first = 0, last = 0;               // steps [first, last]
    uint32_t peersBegin = 0, peersEnd = 0;      // in peers
    uint32_t sendersBegin = 0, sendersEnd = 0;  // in senders
  };
  // The n-th message of this call received from recvPeer, sent to sendPeer and to sendPeer2.
  struct Messages {
    uint32_t recv = 0, send = 0, send2 = 0;
  };
  // What the executor needs of a step beyond its fields, resolved once (issue 14, session 12):
  // whether its addresses are in the scratch space (mapped per call: the memory behind it may
  // differ), and whether what arrives is only copied (kRecv, kRecvCopySend: the transport puts
  // it in place). Nothing that depends on the schedule's public fields (type, op), which a
  // caller may still change after a run.
  struct Run {
    bool mapSrc = false, mapDst = false;
    bool copies = false;
  };

  std::vector<Group> groups;
  std::vector<int> peers;
  std::vector<int> senders;        // per group, the distinct peers its steps send to
  std::vector<Messages> messages;  // by step
  std::vector<Run> runs;           // by step

  std::span<const int> peersOf(const Group& g) const {
    return {peers.data() + g.peersBegin, peers.data() + g.peersEnd};
  }
  std::span<const int> sendersOf(const Group& g) const {
    return {senders.data() + g.sendersBegin, senders.data() + g.sendersEnd};
  }
};

// The steps are a sequence of groups; the executor runs one group at a time, the steps of a
// group concurrently. The container keeps the grouping rule in one place: a step with count 0
// moves nothing and is dropped, and dropping it never ends or splits a group (both sides of a
// transfer compute the same counts, so both drop it).
class Schedule {
 public:
  std::string algorithm;  // for logs: "ring", ...
  device::DataType type = device::DataType::kFloat32;
  device::RedOp op = device::RedOp::kSum;
  int nranks = 1;
  // Point-to-point schedules tag messages per peer instead of per collective sequence number:
  // only the two ranks of a pair take part, so the communicator-wide sequence can't be used.
  bool p2p = false;

  // Adds a group of one step (nothing when its count is 0).
  void add(const Step& step);
  // Adds `group` as one group: its non-empty steps, in order, run concurrently. A group whose
  // steps are all empty adds nothing.
  void addGroup(std::span<const Step> group);
  void addGroup(std::initializer_list<Step> group) { addGroup({group.begin(), group.size()}); }
  const std::vector<Step>& steps() const { return steps_; }

  // Reserves `bytes` of scratch (partial sums that are forwarded but not kept) and returns its
  // address in this schedule's scratch space. The schedule only records the space: the
  // executor backs it with memory while it runs the schedule (ScratchMemory), so building a
  // schedule allocates none, and a simulator can build the schedules of thousands of ranks.
  std::byte* allocScratch(size_t bytes);
  // Bytes of scratch space the steps use (regions 64-byte aligned).
  size_t scratchBytes() const { return scratchBytes_; }

  // The steps' Layout, derived at the first use after the last step was added (thread-safe:
  // concurrent first uses may both derive it; one copy is kept).
  const Layout& layout() const {
    if (const Layout* kept = layout_.get()) return *kept;  // inline: the executor asks per call
    return deriveLayout();
  }

  std::string dump() const;

 private:
  // Holds the derived Layout. A copy or move of the schedule starts without one, and adding a
  // step drops it.
  class LayoutCache {
   public:
    LayoutCache() = default;
    LayoutCache(const LayoutCache&) {}
    LayoutCache& operator=(const LayoutCache&) {
      reset();
      return *this;
    }
    ~LayoutCache() { reset(); }
    const Layout* get() const { return layout_.load(std::memory_order_acquire); }
    // Keeps `made` unless another thread kept one first; returns the one kept.
    const Layout& keep(std::unique_ptr<Layout> made) const;
    void reset() { delete layout_.exchange(nullptr, std::memory_order_acq_rel); }

   private:
    mutable std::atomic<Layout*> layout_{nullptr};
  };

  const Layout& deriveLayout() const;

  std::vector<Step> steps_;
  size_t scratchBytes_ = 0;
  LayoutCache layout_;
};

// The scratch space of every schedule starts at this address, which no real buffer has: it
// is above every user-space address of 64-bit Linux (at most 2^56 with 5-level paging), so
// an address of the space never aliases memory a step reads or writes otherwise.
inline constexpr uintptr_t kScratchBase = uintptr_t{1} << 62;
inline bool inScratchSpace(const void* p) { return reinterpret_cast<uintptr_t>(p) >= kScratchBase; }

// The memory behind the scratch space of the schedules one communicator runs, kept from call to
// call: backing a schedule's scratch with fresh memory on every call faulted its pages in again
// each time (64 MiB: 16,384 page faults, each page zeroed by the kernel, several times the copy
// that fills it; Bruck's reduce-scatter ran 4-5x slower than the ring over shm). One block,
// grown to the largest scratch asked for up to maxBytes; a larger scratch, and a second run
// while the block is lent (two streams of one communicator), get memory of their own for the
// call. Freed with the arena (the communicator's).
class ScratchArena {
 public:
  // Bruck's reduce-scatter and the all-to-all copy the whole buffer: calls up to 256 MiB keep
  // their scratch.
  static constexpr size_t kDefaultMaxBytes = size_t{256} << 20;

  explicit ScratchArena(size_t maxBytes = kDefaultMaxBytes) : maxBytes_(maxBytes) {}
  ScratchArena(const ScratchArena&) = delete;
  ScratchArena& operator=(const ScratchArena&) = delete;

  // Gives the block back to its arena when the run ends.
  struct GiveBack {
    ScratchArena* arena = nullptr;
    void operator()(std::byte*) const { arena->giveBack(); }
  };
  using Lease = std::unique_ptr<std::byte, GiveBack>;
  // The block, at least `bytes` long, for one run; empty when it is lent or `bytes` is over
  // maxBytes (the caller allocates its own).
  Lease borrow(size_t bytes);

  // How many times the block was allocated (grown): 1 however many calls reused it.
  size_t allocations() const;

 private:
  void giveBack();

  const size_t maxBytes_;
  // Taken by the exchange that sets it (no mutex: ~70 instructions per in-place small call);
  // block_ and bytes_ belong to the thread that holds it.
  std::atomic<bool> lent_{false};
  std::unique_ptr<std::byte[]> block_;  // no zero fill: partial sums are written first
  size_t bytes_ = 0;
  std::atomic<size_t> allocations_{0};
};

// Memory behind one schedule's scratch space while the executor runs it: map() turns an
// address of the space into the memory's, and leaves any other address alone. Borrowed from
// `arena` when it has a block for it, else allocated for this run.
class ScratchMemory {
 public:
  explicit ScratchMemory(size_t bytes, ScratchArena* arena = nullptr);
  template <typename T>
  T* map(T* p) const {
    if (!inScratchSpace(p)) return p;
    const uintptr_t off = reinterpret_cast<uintptr_t>(p) - kScratchBase;
    return reinterpret_cast<T*>(base_ + off);
  }

 private:
  ScratchArena::Lease lease_;
  std::unique_ptr<std::byte[]> own_;  // no zero fill: partial sums are written first
  std::byte* base_ = nullptr;
};

}  // namespace trnccl::schedule
