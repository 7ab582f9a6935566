#include "transports/shm/ll.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <new>

#include "common/env.h"
#include "common/sleeper.h"
#include "transports/shm/record.h"
#include "transports/shm/testing.h"

namespace trnccl::transport::shm {
namespace {

constexpr uint64_t kLineBytes = kLlLineBytes;
constexpr uint64_t kCtrlBytes = sizeof(LlCtrl);
static_assert(sizeof(LlLine) == kLlLineBytes && kCtrlBytes % kLlLineBytes == 0);

}  // namespace

uint64_t llAreaBytes(uint32_t threshold, uint64_t fifoBytes) {
  uint64_t quarter = fifoBytes / 4;
  if (threshold == 0 || quarter < kCtrlBytes + 2 * kLineBytes) return 0;
  // At most a quarter of the region: the control block, then a power of two of lines (a line's
  // slot is a mask, not a division, per 8 bytes). A multiple of 64, so the record ring stays one.
  return kCtrlBytes + std::bit_floor((quarter - kCtrlBytes) / kLineBytes) * kLineBytes;
}

LlArea llArea(std::byte* fifoData, uint64_t fifoBytes, uint32_t threshold) {
  uint64_t bytes = llAreaBytes(threshold, fifoBytes);
  if (bytes == 0) return {};
  std::byte* base = fifoData + (fifoBytes - bytes);
  LlArea area;
  area.ctrl = reinterpret_cast<LlCtrl*>(base);
  area.lines = reinterpret_cast<LlLine*>(base + kCtrlBytes);
  area.count = (bytes - kCtrlBytes) / kLineBytes;
  return area;
}

void initLlArea(std::byte* fifoData, uint64_t fifoBytes, uint32_t threshold) {
  uint64_t bytes = llAreaBytes(threshold, fifoBytes);
  if (bytes == 0) return;
  auto* ctrl = new (fifoData + (fifoBytes - bytes)) LlCtrl();
  ctrl->firstSeq = testing::llFirstSeq();
}

Result<uint32_t> llThresholdFromEnv() {
  int64_t value = env::getInt("TRNCCL_SHM_LL_THRESHOLD", kLlDefaultThreshold);
  if (value < 0 || value > std::numeric_limits<uint32_t>::max()) {
    return invalidArgument("shm: TRNCCL_SHM_LL_THRESHOLD={} must be 0 (off) .. 2^32-1 bytes",
                           value);
  }
  return static_cast<uint32_t>(value);
}

// ---- writer ----

LlWriter::LlWriter(LlArea area, DoorbellWord* peerBell)
    : area_(area), peerBell_(peerBell), seq_(area.ctrl ? area.ctrl->firstSeq - 1 : 0) {}

void LlWriter::begin(uint64_t tag, uint64_t bytes, uint64_t index) {
  seq_ = llNextSeq(seq_);
  tag_ = tag;
  bytes_ = bytes;
  index_ = static_cast<uint32_t>(index);
  headerPending_ = true;
}

bool LlWriter::roomAfterReadingTail(uint64_t need) {
  tail_ = area_.ctrl->tail.load(std::memory_order_acquire);
  return area_.count - (head_ - tail_) >= need;
}

size_t LlWriter::write(const std::byte* src, size_t bytes, uint64_t moved) {
  const bool last = moved + bytes == bytes_;
  size_t taken = 0;
  if (headerPending_) {  // moved == 0: the header line goes first, with the first bytes
    const size_t first = std::min<uint64_t>(bytes_, kLlHeaderData);
    if (bytes < first || !room(kLlHeaderLines)) return 0;
    uint64_t line[7] = {tag_, bytes_ | (uint64_t{index_} << 32)};
    if (first == kLlHeaderData) {
      std::memcpy(&line[2], src, kLlHeaderData);  // the common case, a constant size
    } else {
      // A short message: constant-size moves of 8, 4, 2, 1 bytes (a variable memcpy is a libc
      // call of ~25 instructions, as much as the rest of the header line).
      auto* to = reinterpret_cast<std::byte*>(&line[2]);
      size_t at = 0;
      for (; at + 8 <= first; at += 8) std::memcpy(to + at, src + at, 8);
      for (size_t piece : {size_t{4}, size_t{2}, size_t{1}}) {
        if ((first & piece) == 0) continue;
        std::memcpy(to + at, src + at, piece);
        at += piece;
      }
    }
    put(line);
    headerPending_ = false;
    taken = first;
  }
  const size_t rest = bytes - taken;
  uint64_t lines = last ? (rest + kLlLineData - 1) / kLlLineData : rest / kLlLineData;
  if (lines > 0 && room(1)) {
    lines = std::min(lines, area_.count - (head_ - tail_));
    const size_t n = std::min<uint64_t>(rest, lines * kLlLineData);
    const std::byte* from = src + taken;
    for (size_t off = 0; off + kLlLineData <= n; off += kLlLineData) {
      uint64_t data[7];
      std::memcpy(data, from + off, kLlLineData);  // a constant size: moves, no libc call
      put(data);
    }
    if (const size_t tail = n % kLlLineData; tail != 0) {  // the message's last, short line
      uint64_t data[7] = {};
      std::memcpy(data, from + n - tail, tail);
      put(data);
    }
    taken += n;
  }
  if (taken > 0) wakeIfSleeping(peerBell_);
  return taken;
}

// ---- reader ----

LlReader::LlReader(LlArea area, DoorbellWord* peerBell, int peer)
    : area_(area),
      peerBell_(peerBell),
      peer_(peer),
      seq_(area.ctrl ? area.ctrl->firstSeq - 1 : 0) {}

void LlReader::begin(uint64_t bytes) {
  seq_ = llNextSeq(seq_);
  bytes_ = bytes;
  last_ = start_ + llMessageLines(bytes) - 1;
  headerSeen_ = false;
}

bool LlReader::header(uint32_t seq, Record& record, uint32_t& index) const {
  if (!ready(start_, seq)) return false;
  const LlLine& line = area_.line(start_);
  uint64_t word1 = line.word[1].load(std::memory_order_relaxed);
  record.kind = static_cast<uint32_t>(RecordKind::kBegin);
  record.a = line.word[0].load(std::memory_order_relaxed);
  record.bytes = static_cast<uint32_t>(word1);
  index = static_cast<uint32_t>(word1 >> 32);
  return true;
}

bool LlReader::peekNext(uint64_t index, Record& record) const {
  uint32_t got = 0;
  return area_.count != 0 && header(llNextSeq(seq_), record, got) &&
         got == static_cast<uint32_t>(index);
}

Result<bool> LlReader::readHeader(uint64_t tag) {
  Record record;
  uint32_t index = 0;
  if (!header(seq_, record, index)) return false;
  // The expected header needs no words (beginRecordProblem builds a string, even an empty one).
  if (record.a != tag || record.bytes != bytes_) {
    std::string problem = beginRecordProblem(record, {tag, bytes_, 0, area_.count * kLlLineData});
    return Status(Code::kInternalError, fmt::format("shm LL: from rank {}: {}", peer_, problem),
                  peer_);
  }
  headerSeen_ = true;
  return true;
}

void LlReader::consumed(uint64_t tail) {
  tail_ = tail;
  if (tail - published_ >= std::max<uint64_t>(1, area_.count / 8)) publish();
}

void LlReader::publish() {
  published_ = tail_;
  area_.ctrl->tail.store(tail_, std::memory_order_release);
  wakeIfSleeping(peerBell_);
}

Status LlReader::idle(uint64_t tag) {
  // A header of another size has its last line elsewhere: check the header meanwhile (a
  // one-line message's header is the line just polled).
  if (!headerSeen_ && last_ != start_) {
    Result<bool> seen = readHeader(tag);
    if (!seen) return seen.status();
  }
  // Hand back the room consumed so far when the sender is short of it for this message (it
  // cannot be for a later one: it writes messages in order).
  if (senderShort()) publish();
  return Status::ok();
}

Result<bool> LlReader::arrived(uint64_t tag) {
  // Only the message's last line is polled until it arrives. Lines become visible in the order
  // they were written (release stores, acquire loads), so then every line is there, and the
  // receiver never reads a cache line the sender is still filling.
  if (!lastLineReady()) {
    TRN_TRY(idle(tag));
    return false;
  }
  TRN_TRY(checkHeader(tag));
  return true;
}

template <typename Put>
Status LlReader::copyOut(uint64_t moved, size_t n, Put put) const {
  // Walks the lines from the one holding byte `moved` (the header line holds bytes 0..39 in its
  // words 2..6, data line i bytes 40 + 56 (i - 1) ..); only the first line's offset is computed.
  uint64_t index =
      moved < kLlHeaderData ? 0 : kLlHeaderLines + (moved - kLlHeaderData) / kLlLineData;
  uint64_t offset = moved < kLlHeaderData ? kLlLineData - kLlHeaderData + moved
                                          : (moved - kLlHeaderData) % kLlLineData;
  const uint64_t end = moved + n;
  for (uint64_t at = moved; at < end; ++index, offset = 0) {
    const LlLine& line = area_.line(start_ + index);
    if (line.word[7].load(std::memory_order_relaxed) != seq_) {
      return internalError("shm LL: from rank {}: line {} of a {}-byte message lost its flag",
                           peer_, index, bytes_);
    }
    uint64_t data[7];
#pragma GCC unroll 7
    for (int i = 0; i < 7; ++i) data[i] = line.word[i].load(std::memory_order_relaxed);
    const size_t k = std::min<uint64_t>(kLlLineData - offset, end - at);
    put(at, reinterpret_cast<const std::byte*>(data) + offset, k);
    at += k;
  }
  return Status::ok();
}

void LlReader::handedOut(uint64_t done) {
  if (done == bytes_) {
    start_ += llMessageLines(bytes_);
    testing::counters().add(testing::Event::kLlMessages);
    consumed(start_);
  } else if (done >= kLlHeaderData) {
    consumed(start_ + kLlHeaderLines + (done - kLlHeaderData) / kLlLineData);
  }
}

Result<size_t> LlReader::read(size_t max, uint64_t moved, uint64_t tag, const Consumer& consume) {
  Result<bool> ready = arrived(tag);
  if (!ready || !*ready) return ready ? Result<size_t>(size_t{0}) : ready.status();
  const size_t n = std::min<uint64_t>(max, bytes_ - moved);
  // Staged in a buffer of 16 lines' data, handed to the consumer when full and at the end.
  alignas(8) std::byte buffer[16 * kLlLineData];
  uint64_t from = moved;
  size_t filled = 0;
  TRN_TRY(copyOut(moved, n, [&](uint64_t at, const std::byte* data, size_t k) {
    if (filled + k > sizeof buffer) {
      consume(from, buffer, filled);
      from = at;
      filled = 0;
    }
    if (k == kLlLineData) {
      std::memcpy(buffer + filled, data, kLlLineData);  // a whole data line: a constant size
    } else {
      std::memcpy(buffer + filled, data, k);
    }
    filled += k;
  }));
  if (filled > 0) consume(from, buffer, filled);
  handedOut(moved + n);
  return n;
}

Result<size_t> LlReader::readInto(std::byte* dst, size_t max, uint64_t moved, uint64_t tag) {
  Result<bool> ready = arrived(tag);
  if (!ready || !*ready) return ready ? Result<size_t>(size_t{0}) : ready.status();
  return readArrivedInto(dst, max, moved, tag);
}

Result<size_t> LlReader::readArrivedInto(std::byte* dst, size_t max, uint64_t moved, uint64_t tag) {
  TRN_TRY(checkHeader(tag));
  const size_t n = std::min<uint64_t>(max, bytes_ - moved);
  TRN_TRY(copyOut(moved, n, [dst](uint64_t at, const std::byte* data, size_t k) {
    if (k == kLlLineData) {
      std::memcpy(dst + at, data, kLlLineData);  // a whole data line: a constant size
    } else {
      std::memcpy(dst + at, data, k);
    }
  }));
  handedOut(moved + n);
  return n;
}

namespace testing {
namespace {
std::atomic<uint32_t> firstSeq{1};
}  // namespace

void setLlFirstSeq(uint32_t seq) { firstSeq.store(seq == 0 ? 1 : seq); }
uint32_t llFirstSeq() { return firstSeq.load(); }
}  // namespace testing

}  // namespace trnccl::transport::shm
