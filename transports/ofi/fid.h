// Ownership of libfabric objects: every fid_* lives in a unique_ptr whose deleter closes it
// (fi_close), and fi_info lists in one that frees them. Closing failures are logged, never
// thrown: they happen in destructors.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace trnccl::transport::ofi {

// Closes `fid`; logs (as `what`) when the provider refuses.
void closeFid(fid_t fid, const char* what);

template <typename T>
struct FidDeleter {
  const char* what;
  void operator()(T* object) const {
    if (object != nullptr) closeFid(&object->fid, what);
  }
};

using FabricPtr = std::unique_ptr<fid_fabric, FidDeleter<fid_fabric>>;
using DomainPtr = std::unique_ptr<fid_domain, FidDeleter<fid_domain>>;
using CqPtr = std::unique_ptr<fid_cq, FidDeleter<fid_cq>>;
using WaitPtr = std::unique_ptr<fid_wait, FidDeleter<fid_wait>>;
using AvPtr = std::unique_ptr<fid_av, FidDeleter<fid_av>>;
using EpPtr = std::unique_ptr<fid_ep, FidDeleter<fid_ep>>;
using MrPtr = std::unique_ptr<fid_mr, FidDeleter<fid_mr>>;

struct InfoDeleter {
  void operator()(fi_info* info) const {
    if (info != nullptr) fi_freeinfo(info);
  }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// "fi_xxx failed: <fi_strerror> (-<code>)", for error messages.
std::string fiError(const char* call, long code);

// Opening, for both endpoints of a rank (endpoint.h, heartbeat.h); `what` starts every error
// ("ofi", "ofi: heartbeat endpoint"). The fabric and domain of `info`:
Status openDomain(fi_info& info, FabricPtr& fabric, DomainPtr& domain, const char* what);
// An address vector (FI_AV_TABLE) and an endpoint of `info` on `domain`, bound to the address
// vector and to `cq` (sends and receives), enabled.
Status openEndpoint(fi_info& info, fid_domain* domain, fid_cq* cq, AvPtr& av, EpPtr& ep,
                    const char* what);
// The endpoint's address (fi_getname).
Result<std::vector<std::byte>> endpointName(fid_ep* ep, const char* what);

}  // namespace trnccl::transport::ofi
