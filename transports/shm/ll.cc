#include "transports/shm/ll.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>

#include "common/env.h"
#include "common/sleeper.h"
#include "transports/shm/record.h"
#include "transports/shm/testing.h"

namespace trnccl::transport::shm {
namespace {

constexpr uint64_t kLineBytes = sizeof(uint64_t);
constexpr uint64_t kCtrlBytes = sizeof(LlCtrl);

uint64_t payloadLines(uint64_t bytes) { return (bytes + 3) / 4; }

}  // namespace

uint64_t llAreaBytes(uint32_t threshold, uint64_t fifoBytes) {
  if (threshold == 0) return 0;
  // A quarter of the region, whole cache lines, so the record ring stays a multiple of 64.
  return fifoBytes / 4 / kCacheLine * kCacheLine;
}

LlArea llArea(std::byte* fifoData, uint64_t fifoBytes, uint32_t threshold) {
  uint64_t bytes = llAreaBytes(threshold, fifoBytes);
  if (bytes <= kCtrlBytes) return {};
  std::byte* base = fifoData + (fifoBytes - bytes);
  LlArea area;
  area.ctrl = reinterpret_cast<LlCtrl*>(base);
  area.lines = reinterpret_cast<std::atomic<uint64_t>*>(base + kCtrlBytes);
  area.count = (bytes - kCtrlBytes) / kLineBytes;
  return area;
}

void initLlArea(std::byte* fifoData, uint64_t fifoBytes, uint32_t threshold) {
  uint64_t bytes = llAreaBytes(threshold, fifoBytes);
  if (bytes <= kCtrlBytes) return;
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

bool LlWriter::room(uint64_t need) {
  if (area_.count - (head_ - tail_) >= need) return true;
  tail_ = area_.ctrl->tail.load(std::memory_order_acquire);
  return area_.count - (head_ - tail_) >= need;
}

size_t LlWriter::write(const std::byte* src, size_t bytes, uint64_t moved) {
  bool last = moved + bytes == bytes_;
  uint64_t lines = last ? payloadLines(bytes) : bytes / 4;
  uint64_t header = headerPending_ ? kLlHeaderLines : 0;
  if (!room(header + std::min<uint64_t>(lines, 1))) return 0;
  lines = std::min(lines, area_.count - (head_ - tail_) - header);
  if (header + lines == 0) return 0;
  if (headerPending_) {
    put(static_cast<uint32_t>(tag_));
    put(static_cast<uint32_t>(tag_ >> 32));
    put(static_cast<uint32_t>(bytes_));
    put(index_);
    headerPending_ = false;
  }
  size_t taken = std::min<uint64_t>(bytes, lines * 4);
  for (size_t off = 0; off < taken; off += 4) {
    uint32_t data = 0;
    std::memcpy(&data, src + off, std::min<size_t>(4, taken - off));
    put(data);
  }
  wakeIfSleeping(peerBell_);
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
  headerSeen_ = false;
}

bool LlReader::header(uint32_t seq, Record& record, uint32_t& index) const {
  uint32_t low = 0, high = 0, bytes = 0;
  if (!ready(start_ + 3, index, seq) || !ready(start_ + 2, bytes, seq) ||
      !ready(start_ + 1, high, seq) || !ready(start_, low, seq)) {
    return false;
  }
  record.kind = static_cast<uint32_t>(RecordKind::kBegin);
  record.a = (uint64_t{high} << 32) | low;
  record.bytes = bytes;
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
  std::string problem = beginRecordProblem(record, {tag, bytes_, 0, area_.count * 4});
  if (!problem.empty()) {
    return Status(Code::kInternalError, fmt::format("shm LL: from rank {}: {}", peer_, problem),
                  peer_);
  }
  headerSeen_ = true;
  return true;
}

void LlReader::consumed(uint64_t tail) {
  if (tail - published_ < std::max<uint64_t>(1, area_.count / 8)) return;
  published_ = tail;
  area_.ctrl->tail.store(tail, std::memory_order_release);
  wakeIfSleeping(peerBell_);
}

Result<size_t> LlReader::read(size_t max, uint64_t moved, uint64_t tag, const Consumer& consume) {
  if (!headerSeen_) {
    Result<bool> seen = readHeader(tag);
    if (!seen || !*seen) return seen ? Result<size_t>(size_t{0}) : seen.status();
  }
  std::byte buffer[256];
  size_t handed = 0;
  const uint64_t first = start_ + kLlHeaderLines;
  while (handed < max && moved + handed < bytes_) {
    size_t n = 0;
    while (n < sizeof buffer && handed + n < max && moved + handed + n < bytes_) {
      uint64_t at = moved + handed + n;
      uint32_t data = 0;
      if (!ready(first + at / 4, data)) break;
      size_t k = std::min<uint64_t>({4 - at % 4, bytes_ - at, max - handed - n, sizeof buffer - n});
      std::memcpy(buffer + n, reinterpret_cast<const std::byte*>(&data) + at % 4, k);
      n += k;
    }
    if (n == 0) break;
    consume(moved + handed, buffer, n);
    handed += n;
  }
  uint64_t done = moved + handed;
  if (done == bytes_) {
    start_ = first + payloadLines(bytes_);
    testing::counters().add(testing::Event::kLlMessages);
    consumed(start_);
  } else {
    consumed(first + done / 4);
  }
  return handed;
}

namespace testing {
namespace {
std::atomic<uint32_t> firstSeq{1};
}  // namespace

void setLlFirstSeq(uint32_t seq) { firstSeq.store(seq == 0 ? 1 : seq); }
uint32_t llFirstSeq() { return firstSeq.load(); }
}  // namespace testing

}  // namespace trnccl::transport::shm
