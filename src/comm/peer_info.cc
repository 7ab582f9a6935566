#include "comm/peer_info.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

#include "common/env.h"

namespace trnccl::comm {
namespace {

uint64_t fnv1a(const std::string& text, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string bootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace

transport::PeerInfo makeSelfInfo(int rank, int device) {
  transport::PeerInfo info;
  info.rank = rank;
  info.device = device;
  info.pid = static_cast<int32_t>(getpid());
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::copy_n(host, info.hostname.size() - 1, info.hostname.begin());
  info.bootId = fnv1a(bootId());
  std::string hostKey = std::string(host) + "/" + bootId();
  if (int64_t k = env::getInt("TRNCCL_EMU_RANKS_PER_NODE", 0); k > 0) {
    hostKey += "/instance" + std::to_string(rank / k);
  }
  info.hostHash = fnv1a(hostKey);
  return info;
}

std::vector<std::byte> RankCard::encode() const {
  std::vector<std::byte> blob(sizeof(info) + bootstrap::RecoveryAddress::kBytes);
  std::memcpy(blob.data(), &info, sizeof(info));
  auto address = recovery.encode();
  std::memcpy(blob.data() + sizeof(info), address.data(), address.size());
  return blob;
}

Result<RankCard> RankCard::decode(std::span<const std::byte> blob, int rank) {
  if (blob.size() != sizeof(transport::PeerInfo) + bootstrap::RecoveryAddress::kBytes) {
    return internalError("bootstrap: rank {} sent a peer record of {} bytes, expected {}", rank,
                         blob.size(),
                         sizeof(transport::PeerInfo) + bootstrap::RecoveryAddress::kBytes);
  }
  RankCard card;
  std::memcpy(&card.info, blob.data(), sizeof(card.info));
  card.recovery = bootstrap::RecoveryAddress::decode(blob.subspan(sizeof(card.info)));
  return card;
}

}  // namespace trnccl::comm
