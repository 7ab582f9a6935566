#include "transports/transport.h"

#include "transports/shm/shm_transport.h"

namespace trnccl::transport {

std::unique_ptr<Transport> makeTransport(const std::string& name) {
  if (name == "shm") return makeShmTransport();
  return nullptr;
}

}  // namespace trnccl::transport
