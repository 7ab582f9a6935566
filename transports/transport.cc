#include "transports/transport.h"

#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"

namespace trnccl::transport {

std::unique_ptr<Transport> makeTransport(const std::string& name) {
  if (name == "shm") return makeShmTransport();
  if (name == "tcp") return makeTcpTransport();
  return nullptr;
}

}  // namespace trnccl::transport
