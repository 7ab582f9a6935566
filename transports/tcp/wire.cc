#include "transports/tcp/wire.h"

#include <fmt/format.h>

namespace trnccl::transport::tcp {

std::string frameProblem(const FrameHeader& header, uint64_t tag, uint64_t messageBytes,
                         uint64_t offset, uint64_t chunkBytes) {
  net::HeaderCheck check = net::checkHeader(
      kFrameProtocol, {header.magic, kFrameProtocol.version, header.chunkBytes}, kChunkBytes);
  if (!check.ok()) {
    return fmt::format("corrupt frame: {} (expecting tag {:#x}, {} bytes, at byte {})",
                       check.problem, tag, messageBytes, offset);
  }
  if (header.tag != tag || header.messageBytes != messageBytes) {
    return fmt::format("message has tag {:#x} and {} bytes, expected tag {:#x} and {} bytes",
                       header.tag, header.messageBytes, tag, messageBytes);
  }
  if (header.offset != offset || header.chunkBytes != chunkBytes) {
    return fmt::format("frame of message tag {:#x} covers bytes [{}, +{}), expected [{}, +{})", tag,
                       header.offset, header.chunkBytes, offset, chunkBytes);
  }
  return {};
}

}  // namespace trnccl::transport::tcp
