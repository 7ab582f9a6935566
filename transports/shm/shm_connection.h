// A shm connection: this rank's outbound FIFO lives in the peer's segment, its inbound FIFO in
// this rank's own segment.
//
// Wire format: a FIFO is a byte ring of 32-byte-aligned records. A message is a kBegin record
// {tag, bytes} followed by data records covering its bytes in order: kInline carries the
// payload right after the record (padded to 32 bytes), the zero-copy kinds (kPointer, kArena,
// kCma) describe where the receiver reads the bytes in the sender's memory (zero_copy.h).
// Records never wrap (ring size is a multiple of 64, positions multiples of 32); inline
// payloads may, and are handed to the consumer as two pieces then. A message of 0 bytes puts
// nothing on the wire: the executor treats it as complete without ever polling it.
//
// The sender writes records, then publishes `head` (release) and rings the receiver's
// doorbell. The receiver checks the kBegin record against what it expects, hands payload to
// the consumer straight out of the ring or the sender's memory, then publishes `tail` once per
// piece consumed (the kBegin and data records' slots go with it), after a descriptor's last
// byte together with `ack`, which it bumps: the sender's sendDone() waits for every descriptor
// it issued to be acknowledged before the caller may reuse the source buffer. It rings the
// sender's doorbell then only if the sender asked (`ringWanted`: it found too little room or
// an unacknowledged descriptor): a ring while the sender slept waiting for the receiver's own
// message woke it for nothing, once per message (issue 14, session 12).
//
// Small messages (up to the receiver's TRNCCL_SHM_LL_THRESHOLD) skip all of that and travel by
// the low-latency protocol at the end of the FIFO's memory, at most a quarter of it (ll.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/fd_guard.h"
#include "transports/core/message.h"
#include "transports/core/transport.h"
#include "transports/shm/ll.h"
#include "transports/shm/record.h"
#include "transports/shm/segment.h"
#include "transports/shm/tsan_sync.h"
#include "transports/shm/zero_copy.h"

namespace trnccl::transport::shm {

// Everything connect() learned about one peer.
struct PeerLink {
  int self = -1;
  int peer = -1;
  pid_t peerPid = 0;
  bool sameProcess = false;
  std::shared_ptr<Segment> own;     // holds the inbound FIFO
  std::shared_ptr<Segment> remote;  // the peer's: holds the outbound FIFO and its doorbell
  uint32_t inSlot = 0;
  uint32_t outSlot = 0;
  uint32_t peerCaps = 0;  // RecvCaps the peer found for reading this rank's memory
  size_t zcopyBytes = 0;  // pieces at least this large go by descriptor; 0: never
  std::shared_ptr<ArenaCache> arenas;
  MemoryLocator locate;  // finds this rank's device memory (SetupContext::locate)
  // The communicator's registered buffers: pieces inside one go by descriptor whatever their
  // size (SetupContext::registered; nullptr: none).
  const RegisteredMemory* registered = nullptr;
};

class ShmConnection final : public Connection {
 public:
  explicit ShmConnection(PeerLink link);

  Status beginSend(uint64_t tag, size_t bytes) override;
  Result<size_t> sendSome(const void* src, size_t bytes) override;
  Result<bool> sendDone() override;
  Status beginRecv(uint64_t tag, size_t bytes) override;
  Result<size_t> recvSome(size_t max, const Consumer& consume) override;
  // An LL message goes from its lines into dst (no consumer built per poll); others as recvSome.
  Result<size_t> recvInto(std::byte* dst, size_t max) override;
  Status checkPeer() override;
  int peer() const override { return link_.peer; }
  const char* transportName() const override { return "shm"; }

  // How large sends to this peer travel, for logs and tests.
  const char* sendMode() const;

 private:
  // The piece currently being consumed by the receiver.
  struct Current {
    RecordKind kind = RecordKind::kBegin;
    uint64_t remaining = 0;  // bytes of the record not yet handed out
    uint64_t consumed = 0;   // bytes of the record already handed out
    Record record;
  };

  bool describe(const void* src, size_t bytes, bool allowCma, Record& record) const;
  void writeRecord(const Record& record);
  void copyIn(uint64_t position, const std::byte* src, size_t bytes);
  void publishHead();
  // Before the sender waits on the receiver (room, acknowledgements): asks it to ring.
  void wantRing();
  // The room once wantRing() is published (the sender found too little).
  uint64_t roomAfterAskingForRing();
  void ringNoLongerWanted();

  Result<bool> nextRecord();
  Status checkBegin(const Record& record) const;
  Status checkData(const Record& record) const;
  Expected expected() const { return {recv_.tag(), recv_.bytes(), recv_.moved(), inCap_}; }
  Result<size_t> consumeCurrent(size_t max, const Consumer& consume);
  Status checkOtherPath();
  Result<const std::byte*> descriptorBytes(size_t bytes);
  // Publishes tail_ and, with `acknowledge`, one more consumed descriptor; rings the sender
  // if it waits for either.
  void publishTail(bool acknowledge);

  PeerLink link_;
  DoorbellWord* peerBell_;
  MessageState send_;  // into the peer's segment
  MessageState recv_;  // from this rank's own segment
  FdGuard pidfd_;      // the peer process, for checkPeer (none: not available, use kill)
  pid_t selfPid_;      // this process (getpid() is a system call; describe() needs it per piece)

  // Sending, into the peer's segment.
  FifoCtrl* outCtrl_;
  std::byte* outData_;
  uint64_t outCap_;
  uint64_t head_ = 0;
  bool beginPending_ = false;
  uint64_t issued_ = 0;      // descriptors written, ever
  bool ringWanted_ = false;  // this sender set outCtrl_->ringWanted

  // Receiving, from this rank's own segment.
  FifoCtrl* inCtrl_;
  std::byte* inData_;
  uint64_t inCap_;
  uint64_t tail_ = 0;
  uint64_t acked_ = 0;
  bool headerSeen_ = true;
  Current cur_;
  // The LL protocol (ll.h): messages of 1 .. threshold bytes; the receiver's threshold decides.
  uint32_t outLlThreshold_;
  uint32_t inLlThreshold_;
  LlWriter llOut_;
  LlReader llIn_;
  bool llSend_ = false;     // the current outgoing message goes by LL
  bool llRecv_ = false;     // the current incoming message comes by LL
  uint64_t sendIndex_ = 0;  // messages begun with bytes, ever, by either path
  uint64_t recvIndex_ = 0;
  std::vector<std::byte> scratch_;  // process_vm_readv target, allocated on first use
  FifoSync outSync_;                // for ThreadSanitizer only (tsan_sync.h)
  FifoSync inSync_;
};

}  // namespace trnccl::transport::shm
