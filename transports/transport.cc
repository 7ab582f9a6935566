#include "transports/transport.h"

#ifdef TRNCCL_HAVE_OFI
#include "transports/ofi/ofi_transport.h"
#endif
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"

namespace trnccl::transport {

std::unique_ptr<Transport> makeTransport(const std::string& name) {
  if (name == "shm") return makeShmTransport();
  if (name == "tcp") return makeTcpTransport();
#ifdef TRNCCL_HAVE_OFI
  if (name == "ofi") return makeOfiTransport();
#endif
  return nullptr;
}

}  // namespace trnccl::transport
