// The records of a shm FIFO (see shm_connection.h for the wire format) and their validation.
// The checks are pure functions of the record and what the receiver posted, so the fuzzer
// (fuzz/shm_record.cc) drives them with arbitrary bytes.
#pragma once

#include <cstdint>
#include <string>

namespace trnccl::transport::shm {

enum class RecordKind : uint32_t { kBegin = 1, kInline = 2, kPointer = 3, kArena = 4, kCma = 5 };

struct Record {
  uint32_t kind = 0;
  int32_t fd = -1;     // kArena: the arena's descriptor in the sender
  uint64_t bytes = 0;  // kBegin: message bytes; others: bytes this record covers
  uint64_t a = 0;      // kBegin: tag; kPointer/kCma: address; kArena: offset in the arena
  uint64_t b = 0;      // kArena: arena bytes
};
inline constexpr uint64_t kRecordBytes = 32;
static_assert(sizeof(Record) == kRecordBytes);

const char* recordKindName(uint32_t kind);

// What the receiver expects: the message beginRecv() posted, how much of it arrived so far,
// and the size of its inbound ring.
struct Expected {
  uint64_t tag = 0;
  uint64_t bytes = 0;
  uint64_t got = 0;
  uint64_t ringBytes = 0;
};

// Empty when the record may be used; otherwise what is wrong with it. A data record passes
// only if it is of a data kind, covers 1 .. (bytes - got) bytes, an inline one fits the ring
// beside its record, and an arena one lies inside its arena (all overflow-safe).
std::string beginRecordProblem(const Record& record, const Expected& expected);
std::string dataRecordProblem(const Record& record, const Expected& expected);

}  // namespace trnccl::transport::shm
