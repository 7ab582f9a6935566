// The low-latency (LL) protocol for small shm messages: NCCL's LL idea, in cache lines.
//
// Why: through the FIFO a small message costs a begin record, a data record and its payload,
// a release store of `head` and a doorbell ring (an atomic add on the receiver's line, plus
// `tail` and its ring on the way back). Here data travels with its ready flag: each 64-byte
// line holds 56 bytes of data and, in its last 8 bytes, the message's sequence number, stored
// after the data with release order (NCCL's LL128 on a CPU cache line). The receiver polls the
// lines themselves and a line is valid once its flag equals the message's sequence number, so
// no separate head, record or doorbell is needed per message. (8-byte lines of 4 data bytes and
// a 4-byte flag, NCCL's LL proper, were measured first: twice the cache lines of the payload
// crossed the cores and a 512-byte message cost more CPU than through the FIFO.)
//
// A message of `bytes` (1 .. threshold) is one header line (tag; bytes and the message's index
// on the connection, counting both paths; then the message's first 40 bytes) then
// ceil((bytes - 40) / 56) data lines, the last one zero-padded: a message of up to 40 bytes is
// one line, one cache line to cross between the cores (the header had a line of its own until
// session 8, which made an 8-byte message two lines written and two polled and read). Message k
// carries sequence firstSeq + k (mod 2^32, skipping 0 so that never-written lines, all zero, never
// match). A stale line still holding an older message's flag cannot match: the sender reuses a line
// only after the receiver consumed it, so at most `lines` messages separate two writes of one line,
// far fewer than 2^32.
//
// A message spans at most as many lines as the ring has (LlArea::maxBytes caps the threshold):
// one line of a longer message would share its slot and sequence number with its own line one
// pass earlier.
//
// Reading: the receiver polls only a message's last line (and its header, when that is another
// line, to catch a size mismatch); once the last line is there every line is (release stores,
// acquire loads), so the receiver never reads a cache line the sender is still filling.
//
// Room: the receiver publishes how many lines it consumed (`tail`) every eighth of the area,
// or when it waits for a message whose last line the sender has no room for by the tail last
// published (not on every poll that finds nothing: that was a store and a doorbell check per
// small message, issue 14), not per message; the sender re-reads it only when its cached room
// is short. Waking: a sender skips the doorbell unless the receiver announced itself as a
// sleeper (wakeIfSleeping, common/sleeper.h); the receiver announces, polls once more, then sleeps
// (DoorbellSleeper), so a line written meanwhile is either seen or wakes it.
//
// Layout: when the receiver's threshold is non-zero, the end of each inbound FIFO's data region
// (at most a quarter of it) is its LL area: an LlCtrl, then a power of two of lines. The receiver's
// threshold is in its FifoCtrl, so both ends of a connection choose the same path for every message
// size.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "common/wait.h"
#include "transports/core/transport.h"
#include "transports/shm/record.h"
#include "transports/shm/segment.h"

namespace trnccl::transport::shm {

inline constexpr uint32_t kLlDefaultThreshold = 256;
inline constexpr uint64_t kLlHeaderLines = 1;
inline constexpr uint64_t kLlLineBytes = 64;
inline constexpr uint64_t kLlLineData = 56;    // the last 8 bytes are the flag
inline constexpr uint64_t kLlHeaderData = 40;  // the header line: tag, bytes and index, then data

// Lines of a message of `bytes`: its header line (with the first kLlHeaderData bytes), then
// the rest in lines of kLlLineData.
inline constexpr uint64_t llMessageLines(uint64_t bytes) {
  return kLlHeaderLines +
         (bytes > kLlHeaderData ? (bytes - kLlHeaderData + kLlLineData - 1) / kLlLineData : 0);
}

// One line: words 0..6 data, word 7 the flag (sequence number).
struct alignas(kLlLineBytes) LlLine {
  std::atomic<uint64_t> word[8];
};

struct LlCtrl {
  alignas(kCacheLine) std::atomic<uint64_t> tail{0};  // lines consumed (receiver, lazily)
  alignas(kCacheLine) uint32_t firstSeq = 1;          // set by the receiver at creation
};

// One LL area in a FIFO's data region.
struct LlArea {
  LlCtrl* ctrl = nullptr;
  LlLine* lines = nullptr;
  uint64_t count = 0;  // lines in the ring, a power of two; 0: no LL area

  // The largest message the area carries. A message never spans more lines than the ring has:
  // its own older line in the same slot would carry the same sequence number.
  uint64_t maxBytes() const {
    return count > kLlHeaderLines ? kLlHeaderData + (count - kLlHeaderLines) * kLlLineData : 0;
  }
  LlLine& line(uint64_t i) const { return lines[i & (count - 1)]; }
};

// Bytes at the end of a FIFO's data region that belong to the LL area (0 when disabled).
uint64_t llAreaBytes(uint32_t threshold, uint64_t fifoBytes);
LlArea llArea(std::byte* fifoData, uint64_t fifoBytes, uint32_t threshold);
// The receiver, at segment creation, before any peer maps it.
void initLlArea(std::byte* fifoData, uint64_t fifoBytes, uint32_t threshold);
// TRNCCL_SHM_LL_THRESHOLD (default kLlDefaultThreshold; 0 disables), or an error.
Result<uint32_t> llThresholdFromEnv();

// The next sequence number after `seq`, skipping 0.
inline uint32_t llNextSeq(uint32_t seq) { return seq + 1 == 0 ? 1 : seq + 1; }

// Writes LL messages into a peer's area and wakes the peer only if it sleeps.
class LlWriter {
 public:
  LlWriter(LlArea area, DoorbellWord* peerBell);
  // `index`: the message's number on this connection, whichever path it takes.
  void begin(uint64_t tag, uint64_t bytes, uint64_t index);
  // Writes the next payload bytes of the current message (`moved` of it already written): the
  // header line once its 40 bytes (or the whole message) are offered, then whole 56-byte lines
  // only unless they end the message. Returns how many bytes were taken.
  size_t write(const std::byte* src, size_t bytes, uint64_t moved);

 private:
  bool room(uint64_t need) {
    if (area_.count - (head_ - tail_) >= need) return true;
    return roomAfterReadingTail(need);
  }
  bool roomAfterReadingTail(uint64_t need);
  // Stores the data words, then the flag (release: a reader that sees it sees the data).
  // Unrolled: a loop over atomics is kept a loop (4-5 instructions a word, session 10's callgrind).
  void put(const uint64_t (&data)[7]) {
    LlLine& line = area_.line(head_++);
#pragma GCC unroll 7
    for (int i = 0; i < 7; ++i) line.word[i].store(data[i], std::memory_order_relaxed);
    line.word[7].store(seq_, std::memory_order_release);
  }

  LlArea area_;
  DoorbellWord* peerBell_;
  uint32_t seq_;
  uint64_t head_ = 0;  // lines written, ever
  uint64_t tail_ = 0;  // the receiver's tail, as last read
  uint64_t tag_ = 0;
  uint64_t bytes_ = 0;
  uint32_t index_ = 0;
  bool headerPending_ = false;
};

// Reads LL messages from this rank's own area.
class LlReader {
 public:
  LlReader(LlArea area, DoorbellWord* peerBell, int peer);
  void begin(uint64_t bytes);
  // Hands up to `max` ready bytes of the current message (`moved` of it already handed) to
  // `consume`; checks the header against `expected` (tag and bytes).
  Result<size_t> read(size_t max, uint64_t moved, uint64_t tag, const Consumer& consume);
  // read() for a consumer that only copies: byte k of the message goes to dst[k], straight from
  // the lines (no staging buffer, no consumer call).
  Result<size_t> readInto(std::byte* dst, size_t max, uint64_t moved, uint64_t tag);
  bool headerSeen() const { return headerSeen_; }
  // Whether the current message arrived whole: one load of its last line (lines become visible
  // in the order they were written). What a poll that finds nothing costs (issue 14: ~3 polls
  // per 8-byte message at 2 ranks went through Result<bool> and the header's Record each).
  bool lastLineReady() const { return ready(last_); }
  // A poll that found the message not yet there: checks the header of a longer message if it is
  // there, and hands back the room consumed so far when the sender needs it for this message.
  Status idle(uint64_t tag);
  // Whether idle() has anything to do (a header to check, room to hand back).
  bool idleWork() const { return senderShort() || (!headerSeen_ && last_ != start_); }
  // readInto() once lastLineReady() said the message is there.
  Result<size_t> readArrivedInto(std::byte* dst, size_t max, uint64_t moved, uint64_t tag);
  // Whether the next LL message to arrive is the connection's message `index`; fills `header`
  // with its tag and bytes as a begin record. For a receiver expecting that message on the
  // FIFO: the two sides' sizes straddle the threshold.
  bool peekNext(uint64_t index, Record& header) const;

 private:
  bool ready(uint64_t line, uint32_t seq) const {
    return area_.line(line).word[7].load(std::memory_order_acquire) == seq;
  }
  bool ready(uint64_t line) const { return ready(line, seq_); }
  // The header of message `seq` at start_, as a begin record, if all of it arrived.
  bool header(uint32_t seq, Record& record, uint32_t& index) const;
  Result<bool> readHeader(uint64_t tag);
  // Once the last line is there (so the header line too): its tag and size against the
  // expected ones, by two loads and compares; the message is built only on a mismatch.
  Status checkHeader(uint64_t tag) {
    if (headerSeen_) return Status::ok();
    const LlLine& line = area_.line(start_);
    if (line.word[0].load(std::memory_order_relaxed) != tag ||
        static_cast<uint32_t>(line.word[1].load(std::memory_order_relaxed)) != bytes_) {
      return readHeader(tag).status();
    }
    headerSeen_ = true;
    return Status::ok();
  }
  // Whether the current message arrived whole (its header checked); when not, the idle work.
  Result<bool> arrived(uint64_t tag);
  // Hands bytes [moved, moved + n) of the arrived message to put(offset, data, count), a line's
  // piece at a time (data valid during the call only).
  template <typename Put>
  Status copyOut(uint64_t moved, size_t n, Put put) const;
  // After bytes [0, done) of the message were handed out.
  void handedOut(uint64_t done);
  // The sender cannot write the current message's last line with the room published so far
  // (it writes line i once i - tail < count): the idle receiver must publish.
  bool senderShort() const { return last_ - published_ >= area_.count; }
  // Lines consumed up to `tail`; published lazily (every eighth of the area, or when idle and
  // the sender is short).
  void consumed(uint64_t tail);
  void publish();

  LlArea area_;
  DoorbellWord* peerBell_;
  int peer_;
  uint32_t seq_;
  uint64_t start_ = 0;      // first line of the current message
  uint64_t last_ = 0;       // its last line (begin())
  uint64_t tail_ = 0;       // lines consumed
  uint64_t published_ = 0;  // tail last published
  uint64_t bytes_ = 0;
  bool headerSeen_ = false;
};

}  // namespace trnccl::transport::shm
