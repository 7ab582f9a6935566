// Fuzz target: the bootstrap frame header codec, the header check every frame passes first
// (transports/net/wire.h, shared with the tcp transport) and the rank-table parser (what a
// rank decodes from the root; the root's checks of a hello are in bootstrap_root.cc).
// Input: byte 0 picks nranks (1..64), bytes 1..32 are a header, the rest a table payload.
#include "bootstrap/bootstrap_wire.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace trnccl::bootstrap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 + wire::kHeaderBytes) return 0;
  int nranks = 1 + data[0] % 64;
  wire::HeaderBytes in;
  std::memcpy(in.data(), data + 1, in.size());
  // Every 32-byte string decodes, and encodes back to itself.
  wire::Header h = wire::decode(in);
  wire::HeaderBytes out = wire::encode(h);
  if (std::memcmp(in.data(), out.data(), in.size()) != 0) std::abort();

  const auto* body = reinterpret_cast<const std::byte*>(data + 1 + wire::kHeaderBytes);
  size_t bodySize = size - 1 - wire::kHeaderBytes;

  // Accepted exactly when magic and version are ours and the length is within the bound (here
  // what follows); foreign exactly when magic or version differ; a problem named otherwise.
  trnccl::transport::net::HeaderCheck check = wire::check(h, bodySize);
  bool ours = h.protoMagic == wire::kProtoMagic && h.version == wire::kProtoVersion;
  if (check.ok() != (ours && h.length <= bodySize) || check.ok() != check.problem.empty() ||
      (check.verdict == trnccl::transport::net::HeaderVerdict::kForeign) != !ours) {
    std::abort();
  }
  std::vector<std::vector<std::byte>> infos;
  if (wire::parseTable(body, bodySize, nranks, infos)) {
    size_t total = 8 * static_cast<size_t>(nranks);
    for (const auto& blob : infos) {
      if (blob.size() > wire::kMaxInfoBytes) std::abort();
      total += blob.size();
    }
    if (infos.size() != static_cast<size_t>(nranks) || total > bodySize) std::abort();
  }
  return 0;
}
