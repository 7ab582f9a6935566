// trncclCommSplit: two rounds over the parent's bootstrap. Round one shares (color, key) so each
// rank knows its new rank (members of its color ordered by key, then parent rank); in round two
// the first member of each color contributes a fresh unique id. Then the members of each color
// initialise their communicator like trncclCommInitRank.
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "api/handle.h"
#include "bootstrap/bootstrap.h"

using trnccl::Status;
using trnccl::api::fail;

namespace {

struct SplitEntry {
  int32_t color = 0;
  int32_t key = 0;
  std::array<char, TRNCCL_UNIQUE_ID_BYTES> id{};
};

trnccl::Result<std::vector<SplitEntry>> exchange(trnccl::comm::Communicator& c,
                                                 const SplitEntry& mine) {
  auto all = c.bootstrap().allGather(std::as_bytes(std::span(&mine, 1)));
  if (!all) return all.status();
  std::vector<SplitEntry> table(c.nranks());
  if (all->size() != table.size() * sizeof(SplitEntry)) {
    return trnccl::internalError("split: got {} bytes, expected {}", all->size(),
                                 table.size() * sizeof(SplitEntry));
  }
  std::memcpy(table.data(), all->data(), all->size());
  return table;
}

}  // namespace

extern "C" trncclResult_t trncclCommSplit(trncclComm_t comm, int color, int key,
                                          trncclComm_t* newcomm, trncclConfig_t* config) {
  if (newcomm == nullptr) return fail(trnccl::invalidArgument("trncclCommSplit: newcomm is NULL"));
  *newcomm = nullptr;
  auto parent = trnccl::api::usable(comm);
  if (!parent) return fail(parent.status());
  if (color < 0 && color != TRNCCL_SPLIT_NOCOLOR) {
    return fail(
        trnccl::invalidArgument("trncclCommSplit: color {} is negative and not "
                                "TRNCCL_SPLIT_NOCOLOR",
                                color));
  }
  if (Status s = trnccl::api::checkConfig(config); !s) {
    return fail(Status(s.code(), "trncclCommSplit: " + s.message()));
  }
  trnccl::comm::Communicator& p = **parent;
  SplitEntry mine{.color = color, .key = key};
  auto round1 = exchange(p, mine);
  if (!round1) return fail(round1.status());
  std::vector<int> members;
  for (int r = 0; r < p.nranks(); ++r) {
    if ((*round1)[r].color == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return (*round1)[a].key < (*round1)[b].key; });
  const bool leader = color != TRNCCL_SPLIT_NOCOLOR && members.front() == p.rank();
  if (leader) {
    auto id = trnccl::bootstrap::createUniqueId(/*useCommIdEnv=*/false);
    if (!id) return fail(id.status());
    id->encode(mine.id.data());
  }
  auto round2 = exchange(p, mine);  // every rank takes part, even with NOCOLOR
  if (!round2) return fail(round2.status());
  if (color == TRNCCL_SPLIT_NOCOLOR) return trncclSuccess;

  auto id = trnccl::bootstrap::UniqueId::decode((*round2)[members.front()].id.data());
  if (!id) return fail(id.status());
  trnccl::comm::Config cfg = trnccl::api::resolve(config, &p.config());
  int rank =
      static_cast<int>(std::find(members.begin(), members.end(), p.rank()) - members.begin());
  return trnccl::api::initChild(p, static_cast<int>(members.size()), rank, *id, cfg, newcomm);
}
