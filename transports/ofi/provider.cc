#include "transports/ofi/provider.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "common/env.h"
#include "common/log.h"
#include "transports/ofi/wire.h"

namespace trnccl::transport::ofi {
namespace {

constexpr uint32_t kApiVersion = FI_VERSION(1, 14);
// Without a name: efa, then the native tcp RDM provider (xnet: "tcp" from libfabric 1.18 on,
// "net" in 1.17), then rxm over tcp (provider.h says why).
constexpr const char* kPreferred[] = {"efa", "tcp", "net", "tcp;ofi_rxm"};
constexpr const char* kRxmEagerLimit = "FI_OFI_RXM_EAGER_LIMIT";

struct Cache {
  std::mutex mutex;
  bool valid = false;
  std::string key;
  std::shared_ptr<const fi_info> list;
  Status error;
};

Cache& cache() {
  static Cache* instance = new Cache();  // never destroyed: used from other static destructors
  return *instance;
}

std::string environmentKey() {
  return env::getString("TRNCCL_OFI_PROVIDER", "") + "|" + env::getString("TRNCCL_OFI_DOMAIN", "") +
         "|" + env::getString("FI_PROVIDER", "");
}

// libfabric 1.17's net reads FI_NET_IFACE where tcp reads FI_TCP_IFACE: a user who pinned tcp
// to an interface pins net there too, unless they set FI_NET_IFACE. Before libfabric first
// initialises (it reads its variables once per process).
void pinNetInterface() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tcp = env::getString("FI_TCP_IFACE", "");
    if (!tcp.empty()) env::setIfUnset("FI_NET_IFACE", tcp);
  });
}

Result<std::shared_ptr<const fi_info>> query() {
  pinNetInterface();
  InfoPtr hints(fi_allocinfo());
  if (!hints) return Status(Code::kSystemError, "ofi: fi_allocinfo failed");
  hints->caps = FI_TAGGED | FI_MSG;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  std::string provider = env::getString("TRNCCL_OFI_PROVIDER", "");
  if (!provider.empty()) hints->fabric_attr->prov_name = ::strdup(provider.c_str());

  fi_info* raw = nullptr;
  int rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &raw);
  InfoPtr list(raw);
  if (rc != 0) {
    return Status(Code::kSystemError, fmt::format("ofi: no RDM tagged provider{}{}: {}",
                                                  provider.empty() ? "" : " named ", provider,
                                                  fiError("fi_getinfo", rc)));
  }
  std::string domain = env::getString("TRNCCL_OFI_DOMAIN", "");
  if (!domain.empty()) {
    // Keep only the entries of that domain, in order.
    InfoPtr kept;
    fi_info* last = nullptr;
    for (fi_info* info = list.get(); info != nullptr; info = info->next) {
      if (info->domain_attr->name == nullptr || domain != info->domain_attr->name) continue;
      fi_info* copy = fi_dupinfo(info);
      if (copy == nullptr) return Status(Code::kSystemError, "ofi: fi_dupinfo failed");
      if (last == nullptr) {
        kept.reset(copy);
      } else {
        last->next = copy;
      }
      last = copy;
    }
    if (!kept) {
      return Status(
          Code::kSystemError,
          fmt::format("ofi: no provider entry has domain '{}' (TRNCCL_OFI_DOMAIN)", domain));
    }
    list = std::move(kept);
  }
  return std::shared_ptr<const fi_info>(list.release(), InfoDeleter());
}

bool isLoopback(const fi_info& info) {
  if (info.src_addr == nullptr) return false;
  const auto* sa = static_cast<const sockaddr*>(info.src_addr);
  if (sa->sa_family == AF_INET && info.src_addrlen >= sizeof(sockaddr_in)) {
    uint32_t address = ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr);
    return (address >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6 && info.src_addrlen >= sizeof(sockaddr_in6)) {
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  }
  return false;
}

const char* providerName(const fi_info& info) {
  return info.fabric_attr && info.fabric_attr->prov_name ? info.fabric_attr->prov_name : "?";
}

}  // namespace

Result<std::shared_ptr<const fi_info>> providerList() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  std::string key = environmentKey();
  if (!c.valid || c.key != key) {
    Result<std::shared_ptr<const fi_info>> list = query();
    c.valid = true;
    c.key = key;
    c.list = list ? *list : nullptr;
    c.error = list.status();
    if (list) {
      TRN_INFO(kNet, "ofi: provider candidates: first {}", describe(*c.list));
    } else {
      TRN_INFO(kNet, "{}", c.error.message());
    }
  }
  if (!c.error) return c.error;
  return c.list;
}

std::string namedProvider() {
  std::string named = env::getString("TRNCCL_OFI_PROVIDER", "");
  if (named.empty()) named = env::getString("FI_PROVIDER", "");
  // A list ("tcp,shm") or an exclusion ("^net") names no one provider.
  if (named.find_first_of(",^") != std::string::npos) return "";
  return named;
}

const fi_info* pickProvider(const fi_info* list, std::string_view named, bool singleHost) {
  if (list == nullptr) return nullptr;
  auto first = [list](std::string_view name) -> const fi_info* {
    for (const fi_info* info = list; info != nullptr; info = info->next) {
      if (providerName(*info) == name) return info;
    }
    return nullptr;
  };
  const fi_info* chosen = named.empty() ? nullptr : first(named);
  for (const char* name : kPreferred) {
    if (chosen == nullptr) chosen = first(name);
  }
  if (chosen == nullptr) chosen = list;
  if (singleHost && !isLoopback(*chosen)) {
    for (const fi_info* info = list; info != nullptr; info = info->next) {
      if (std::strcmp(providerName(*info), providerName(*chosen)) == 0 && isLoopback(*info)) {
        return info;
      }
    }
  }
  return chosen;
}

Result<InfoPtr> chooseProvider(bool singleHost) {
  Result<std::shared_ptr<const fi_info>> list = providerList();
  if (!list) return list.status();
  InfoPtr copy(fi_dupinfo(pickProvider(list->get(), namedProvider(), singleHost)));
  if (!copy) return Status(Code::kSystemError, "ofi: fi_dupinfo failed");
  return copy;
}

std::string tuneProvider(const fi_info& info, size_t pieceBytes) {
  if (std::strcmp(providerName(info), "tcp;ofi_rxm") != 0) return "";
  static std::once_flag once;
  std::call_once(once, [pieceBytes] {
    // Once, during setup: libfabric reads it with getenv when the endpoint opens. Under the
    // provider list's lock too, so that no thread of ours is inside fi_getinfo meanwhile.
    std::lock_guard lock(cache().mutex);
    env::setIfUnset(kRxmEagerLimit, std::to_string(pieceBytes));
  });
  return env::getString(kRxmEagerLimit, "");
}

bool nativeTcp(const fi_info& info) {
  return info.ep_attr != nullptr && info.ep_attr->protocol == FI_PROTO_XNET;
}

size_t streamBytes(const fi_info& info) {
  const int64_t fallback = nativeTcp(info) ? static_cast<int64_t>(kNativeStreamBytes) : 0;
  return static_cast<size_t>(
      std::max<int64_t>(env::getInt("TRNCCL_OFI_STREAM_BYTES", fallback), 0));
}

size_t zeroCopyBytes(const fi_info& info) {
  const int64_t fallback = nativeTcp(info) ? static_cast<int64_t>(kNativeZeroCopyBytes) : 0;
  return static_cast<size_t>(std::max<int64_t>(env::getInt("TRNCCL_OFI_ZCOPY_BYTES", fallback), 0));
}

size_t placeBytes(const fi_info& info) {
  const int64_t fallback = nativeTcp(info) ? static_cast<int64_t>(kNativePlaceBytes) : 0;
  return static_cast<size_t>(std::max<int64_t>(env::getInt("TRNCCL_OFI_PLACE_BYTES", fallback), 0));
}

size_t headerSlotBytes(const fi_info& info) {
  const bool native = nativeTcp(info);
  const size_t fallback = (native ? kNativeHeaderSlotBytes : kHeaderSlotBytes) - kHeaderBytes;
  const int64_t wanted = env::getInt("TRNCCL_OFI_INLINE_BYTES", static_cast<int64_t>(fallback));
  const int64_t largest =
      static_cast<int64_t>(std::min<size_t>(size_t{4} << 20, info.ep_attr->max_msg_size)) -
      static_cast<int64_t>(kHeaderBytes);
  const int64_t bytes = std::clamp<int64_t>(wanted, 64, std::max<int64_t>(largest, 64));
  if (bytes != wanted) {
    TRN_WARN(kNet, "ofi: TRNCCL_OFI_INLINE_BYTES={} is outside [64, {}]; using {}", wanted, largest,
             bytes);
  }
  return static_cast<size_t>(bytes) + kHeaderBytes;
}

std::string describe(const fi_info& info) {
  const char* domain = info.domain_attr && info.domain_attr->name ? info.domain_attr->name : "?";
  const char* fabric = info.fabric_attr && info.fabric_attr->name ? info.fabric_attr->name : "?";
  return fmt::format("{}, domain {}, fabric {}, max message {}, mr_mode {:#x}, progress {}/{}",
                     providerName(info), domain, fabric, info.ep_attr->max_msg_size,
                     static_cast<unsigned>(info.domain_attr->mr_mode),
                     static_cast<int>(info.domain_attr->control_progress),
                     static_cast<int>(info.domain_attr->data_progress));
}

}  // namespace trnccl::transport::ofi
