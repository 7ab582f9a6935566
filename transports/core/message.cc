#include "transports/core/message.h"

namespace trnccl::transport {

Status MessageState::busy() const {
  std::string message =
      direction_ == Direction::kSend
          ? fmt::format(
                "{}: beginSend to rank {} while {} bytes of the previous message were not taken",
                transport_, peer_, left())
          : fmt::format(
                "{}: beginRecv from rank {} while {} bytes of the previous message were not "
                "received",
                transport_, peer_, left());
  return Status(Code::kInvalidUsage, std::move(message), peer_);
}

}  // namespace trnccl::transport
