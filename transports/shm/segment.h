// One rank's POSIX shared-memory segment: a header with the rank's doorbell, then one inbound
// FIFO per shm peer (control words + ring buffer).
//
// Why one segment per receiving rank rather than one per pair: a rank's doorbell and all its
// inbound rings live together, so a peer needs one mapping per rank it talks to and the
// receiver owns (creates, sizes, unlinks) all the memory it reads. Hygiene (reliability
// anchors 3.5): names are unique per communicator, the segment is created O_EXCL with mode
// 0600, allocated in full up front (ENOSPC at setup instead of SIGBUS later), and unlinked as
// soon as every peer has mapped it, so a crash leaves nothing behind in /dev/shm.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/fd_guard.h"
#include "common/status.h"
#include "common/wait.h"

namespace trnccl::transport::shm {

inline constexpr size_t kCacheLine = 64;
inline constexpr uint64_t kSegmentMagic = 0x6873'6c63'636e'7274;  // "trncclsh"
inline constexpr uint32_t kSegmentVersion = 2;                    // 2: FifoCtrl::ringWanted

// Capabilities a receiver found at setup for reading a sender's memory in place.
enum RecvCaps : uint32_t {
  kCapCma = 1u << 0,       // process_vm_readv works on the sender
  kCapArenaMap = 1u << 1,  // /proc/<sender pid>/fd/<fd> can be opened (device arenas)
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared atomics must be address-free");

// Control words of one inbound FIFO. Counters are monotonic byte/record counts, each on its own
// cache line so the producer's and the consumer's writes never share a line.
struct alignas(kCacheLine) FifoCtrl {
  alignas(kCacheLine) std::atomic<uint64_t> head{0};  // bytes produced (sender writes)
  alignas(kCacheLine) std::atomic<uint64_t> tail{0};  // bytes consumed (receiver writes)
  alignas(kCacheLine) std::atomic<uint64_t> ack{0};   // descriptors consumed (receiver writes)
  // Nonzero while the sender waits for room or for an acknowledgement (sender writes): the
  // receiver rings the sender's doorbell after publishing tail/ack only then (issue 14).
  alignas(kCacheLine) std::atomic<uint32_t> ringWanted{0};
  alignas(kCacheLine) int32_t senderRank = -1;  // set by the owner at creation
  uint32_t receiverCaps = 0;                    // RecvCaps, set by the owner at setup
  uint32_t llThreshold = 0;  // LL protocol up to this many bytes (ll.h), set by the owner
};

struct SegmentHeader {
  uint64_t magic = 0;
  uint32_t version = 0;
  int32_t ownerRank = -1;
  int32_t ownerPid = 0;
  uint32_t slots = 0;
  uint64_t fifoBytes = 0;
  uint64_t commHash = 0;
  alignas(kCacheLine) DoorbellWord bell;  // the owner's doorbell; peers ring it
};

// Offsets of the parts of a segment with `slots` FIFOs of `fifoBytes` each.
struct SegmentLayout {
  uint32_t slots = 0;
  uint64_t fifoBytes = 0;

  static size_t ctrlOffset();
  size_t dataOffset() const;
  // Total bytes, or 0 when the size overflows.
  size_t totalBytes() const;
};

// "/trnccl-<commHash hex>-r<rank>-<owner's process nonce hex>". The nonce keeps two jobs apart
// that share /dev/shm and a TRNCCL_COMM_ID (so a comm hash): e.g. two jobs in separate network
// namespaces, each with its root at the same address. Peers learn the nonce from the owner's hello.
std::string segmentName(uint64_t commHash, int rank, uint64_t ownerNonce);

// An open, mapped segment. Owned segments unlink their name on destruction unless unlink()
// already ran; every segment closes its fd and unmaps its memory.
// Maps every page of [base, base+bytes) into this process now, writable, rather than on first
// use: a page's first access costs a fault, and under nested virtualisation (our CI machines) a
// very slow one (4-rank all-reduces of 32 KiB took ~900 us instead of ~70 us until each FIFO
// had wrapped once). Reads and writes back each page's first byte: only for memory that no
// other thread or process writes meanwhile.
void touchPages(std::byte* base, size_t bytes);

class Segment {
 public:
  // Creates (O_EXCL, 0600) and fully allocates the caller's own segment and initialises its
  // header; `senderRanks[i]` is the rank writing into slot i.
  static Result<std::shared_ptr<Segment>> create(const std::string& name, uint64_t commHash,
                                                 int ownerRank, const int* senderRanks,
                                                 uint32_t slots, uint64_t fifoBytes);
  // Opens and maps a peer's segment, validating its header.
  static Result<std::shared_ptr<Segment>> open(const std::string& name, uint64_t commHash,
                                               int ownerRank);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Removes the name from /dev/shm; the mapping stays valid.
  Status unlink();
  // Closes the descriptor; the mapping stays valid.
  void closeFd();
  int fd() const { return fd_.get(); }
  const std::string& name() const { return name_; }

  SegmentHeader* header() const { return reinterpret_cast<SegmentHeader*>(base_); }
  uint32_t slots() const { return header()->slots; }
  uint64_t fifoBytes() const { return header()->fifoBytes; }
  FifoCtrl* ctrl(uint32_t slot) const;
  std::byte* data(uint32_t slot) const;
  // The slot whose sender is `rank`, or -1.
  int slotOf(int rank) const;

 private:
  Segment(std::string name, FdGuard fd, std::byte* base, size_t bytes, bool owned)
      : name_(std::move(name)), fd_(std::move(fd)), base_(base), bytes_(bytes), linked_(owned) {}

  std::string name_;
  FdGuard fd_;
  std::byte* base_ = nullptr;
  size_t bytes_ = 0;
  bool linked_ = false;  // we created the name and have not unlinked it yet
};

}  // namespace trnccl::transport::shm
