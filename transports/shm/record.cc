#include "transports/shm/record.h"

#include <fmt/format.h>

namespace trnccl::transport::shm {

const char* recordKindName(uint32_t kind) {
  switch (static_cast<RecordKind>(kind)) {
    case RecordKind::kBegin:
      return "header";
    case RecordKind::kInline:
      return "inline";
    case RecordKind::kPointer:
      return "pointer";
    case RecordKind::kArena:
      return "arena";
    case RecordKind::kCma:
      return "cma";
  }
  return "unknown";
}

std::string beginRecordProblem(const Record& record, const Expected& expected) {
  if (record.kind != static_cast<uint32_t>(RecordKind::kBegin)) {
    return fmt::format(
        "expected a message header (tag {:#x}, {} bytes), found a record of "
        "kind {} ({})",
        expected.tag, expected.bytes, record.kind, recordKindName(record.kind));
  }
  if (record.a != expected.tag || record.bytes != expected.bytes) {
    return fmt::format("message has tag {:#x} and {} bytes, expected tag {:#x} and {} bytes",
                       record.a, record.bytes, expected.tag, expected.bytes);
  }
  return {};
}

std::string dataRecordProblem(const Record& record, const Expected& expected) {
  const uint64_t left = expected.got <= expected.bytes ? expected.bytes - expected.got : 0;
  const auto kind = static_cast<RecordKind>(record.kind);
  const bool known = kind == RecordKind::kInline || kind == RecordKind::kPointer ||
                     kind == RecordKind::kArena || kind == RecordKind::kCma;
  const uint64_t inlineRoom =
      expected.ringBytes > kRecordBytes ? expected.ringBytes - kRecordBytes : 0;
  const bool sane =
      record.bytes != 0 && record.bytes <= left &&
      (kind != RecordKind::kInline || record.bytes <= inlineRoom) &&
      (kind != RecordKind::kArena || (record.a <= record.b && record.bytes <= record.b - record.a));
  if (known && sane) return {};
  return fmt::format(
      "corrupt record in message tag {:#x}: kind {} ({}), {} bytes, {} bytes of "
      "the message left",
      expected.tag, record.kind, recordKindName(record.kind), record.bytes, left);
}

}  // namespace trnccl::transport::shm
