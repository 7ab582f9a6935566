#include "transports/ofi/fid.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "common/log.h"

namespace trnccl::transport::ofi {

void closeFid(fid_t fid, const char* what) {
  int rc = fi_close(fid);
  if (rc != 0) TRN_WARN(kNet, "ofi: closing the {} failed: {}", what, fiError("fi_close", rc));
}

std::string fiError(const char* call, long code) {
  int positive = static_cast<int>(code < 0 ? -code : code);
  return fmt::format("{} failed: {} (-{})", call, fi_strerror(positive), positive);
}

Status openDomain(fi_info& info, FabricPtr& fabric, DomainPtr& domain, const char* what) {
  fid_fabric* f = nullptr;
  int rc = fi_fabric(info.fabric_attr, &f, nullptr);
  if (rc != 0) return systemError("{}: {}", what, fiError("fi_fabric", rc));
  fabric.reset(f);
  fid_domain* d = nullptr;
  rc = fi_domain(fabric.get(), &info, &d, nullptr);
  if (rc != 0) return systemError("{}: {}", what, fiError("fi_domain", rc));
  domain.reset(d);
  return Status::ok();
}

namespace {

// libfabric 1.17's shm provider names an endpoint's region after `src_addr` ("fi_shm://<pid>",
// then ":<uid>:<n>", n counting the process's endpoints) and fi_enable fails with EBUSY where a
// file of that name is left in /dev/shm by an earlier process that had the same pid (killed
// before it closed its endpoints; pids wrap at pid_max). So each shm endpoint gets a source
// address of its own: the pid and a random 64-bit nonce, drawn once per process.
InfoPtr withUniqueShmName(const fi_info& info) {
  if (info.fabric_attr == nullptr || info.fabric_attr->prov_name == nullptr ||
      std::strcmp(info.fabric_attr->prov_name, "shm") != 0 || info.addr_format != FI_ADDR_STR) {
    return nullptr;
  }
  static const uint64_t nonce = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  std::string name = fmt::format("fi_shm://trnofi-{}-{:016x}", ::getpid(), nonce);
  InfoPtr named(fi_dupinfo(&info));
  if (!named) return nullptr;
  std::free(named->src_addr);
  named->src_addr = ::strdup(name.c_str());
  named->src_addrlen = named->src_addr != nullptr ? name.size() + 1 : 0;
  return named;
}

}  // namespace

Status openEndpoint(fi_info& info, fid_domain* domain, fid_cq* cq, AvPtr& av, EpPtr& ep,
                    const char* what) {
  fi_av_attr avAttr{};
  avAttr.type = FI_AV_TABLE;
  fid_av* a = nullptr;
  int rc = fi_av_open(domain, &avAttr, &a, nullptr);
  if (rc != 0) return systemError("{}: {}", what, fiError("fi_av_open", rc));
  av.reset(a);
  fid_ep* e = nullptr;
  InfoPtr named = withUniqueShmName(info);
  rc = fi_endpoint(domain, named ? named.get() : &info, &e, nullptr);
  if (rc != 0) return systemError("{}: {}", what, fiError("fi_endpoint", rc));
  ep.reset(e);
  rc = fi_ep_bind(ep.get(), &av->fid, 0);
  if (rc != 0) {
    return systemError("{}: binding the address vector: {}", what, fiError("fi_ep_bind", rc));
  }
  rc = fi_ep_bind(ep.get(), &cq->fid, FI_TRANSMIT | FI_RECV);
  if (rc != 0) {
    return systemError("{}: binding the completion queue: {}", what, fiError("fi_ep_bind", rc));
  }
  rc = fi_enable(ep.get());
  if (rc != 0) return systemError("{}: {}", what, fiError("fi_enable", rc));
  return Status::ok();
}

Result<std::vector<std::byte>> endpointName(fid_ep* ep, const char* what) {
  std::vector<std::byte> name(256);
  size_t bytes = name.size();
  int rc = fi_getname(&ep->fid, name.data(), &bytes);
  if (rc != 0) return systemError("{}: {}", what, fiError("fi_getname", rc));
  name.resize(bytes);
  return name;
}

}  // namespace trnccl::transport::ofi
