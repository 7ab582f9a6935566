// The one check of a header's fixed fields that every trnccl protocol over TCP applies (the
// bootstrap's frames, the tcp transport's handshake and data frames) before it reads, or
// allocates for, anything that follows: the magic says the peer speaks this protocol at all,
// the version that both ends speak the same one, the length that the payload it announces
// fits the protocol's bound. Pure, so it is fuzzed (fuzz/bootstrap_wire.cc,
// fuzz/transport_records.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trnccl::transport::net {

struct Protocol {
  std::string_view name;  // in messages: "bootstrap", "tcp handshake"
  uint64_t magic = 0;
  uint32_t version = 0;
};

// What a received header says, each field widened to the largest any protocol uses.
struct Preamble {
  uint64_t magic = 0;
  uint32_t version = 0;
  uint64_t length = 0;  // payload bytes announced (0 for fixed-size messages)
};

enum class HeaderVerdict {
  kOk,
  kForeign,  // wrong magic or version: not a peer of ours; close without a reply
  kTooLong,  // ours, announcing more than the bound: refuse before allocating anything
};

struct HeaderCheck {
  HeaderVerdict verdict = HeaderVerdict::kOk;
  std::string problem;  // empty when kOk, else what is wrong, for a log line or an error
  bool ok() const { return verdict == HeaderVerdict::kOk; }
};

HeaderCheck checkHeader(const Protocol& protocol, const Preamble& got, uint64_t maxLength);

}  // namespace trnccl::transport::net
