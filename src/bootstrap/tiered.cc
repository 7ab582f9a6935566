// The bootstrap of trncclCommInitRankScalable: k unique ids, so that no single root serves every
// rank. With k = 1 it is the ordinary bootstrap. With k >= 2 the ranks form k - 1 contiguous
// groups, rank r in group g = r (k-1) / nranks, which checks in at the root of id g + 1; the
// first rank of each group (its leader) also joins a session of the k - 1 leaders at the root
// of id 0. So a root serves about nranks / (k-1) connections (id 0's root: k - 1).
//
// Every operation of the OobChannel runs in three steps over these sessions:
//   allGather: the group's allGather, then the leaders' (blocks of different groups differ in
//   size: padded to the largest), then each leader hands the whole table to its group (a
//   broadcast round of the group's root: the leader sends it once, the root sends it once to
//   each rank of the group, the others send nothing);
//   barrier: the group's, the leaders', the group's.
// Failures: a group root reports its group's failures to that group (a rank gone, a revoke),
// the leaders' root to the leaders. A leader bridges the two: the first failure either session
// reports to it (at its next look at the roots: an exchange, the checks between and during
// calls, trncclCommGetAsyncError) it passes on to the other session as a revoke carrying the
// message, whose root then fails every rank there. So a failure or revoke anywhere reaches the
// leaders and, through each, every group. A rank that revokes tells its group and, as a leader,
// the leaders itself, naming itself by its rank in the communicator.
#include <algorithm>
#include <cstring>

#include "bootstrap/bootstrap.h"
#include "bootstrap/tiers.h"
#include "common/bytes.h"
#include "common/log.h"

namespace trnccl::bootstrap {

namespace {

// Leaders' allGather of blocks that may differ in size: sizes first, then the blocks padded
// to the largest. Returns the blocks, leader order.
Result<std::vector<std::vector<std::byte>>> gatherBlocks(Bootstrap& top,
                                                         std::span<const std::byte> mine) {
  uint64_t size = mine.size();
  auto sizes = top.allGather(std::as_bytes(std::span(&size, 1)));
  if (!sizes) return sizes.status();
  std::vector<uint64_t> each(sizes->size() / sizeof(uint64_t));
  std::memcpy(each.data(), sizes->data(), sizes->size());
  const uint64_t widest = *std::max_element(each.begin(), each.end());
  std::vector<std::byte> padded(widest);
  std::copy(mine.begin(), mine.end(), padded.begin());
  auto all = top.allGather(padded);
  if (!all) return all.status();
  std::vector<std::vector<std::byte>> blocks(each.size());
  for (size_t i = 0; i < each.size(); ++i) {
    const std::byte* at = all->data() + i * widest;
    blocks[i].assign(at, at + each[i]);
  }
  return blocks;
}

}  // namespace

Status Bootstrap::Tiers::relayFromLocal(Status s) {
  if (!s.isOk() && leader() && !relayed.exchange(true)) {
    const int first = groupFirst[group], last = groupFirst[group + 1] - 1;
    top->revokeWith(Status(s.code(), fmt::format("{} (reported by the root of group {}: ranks "
                                                 "{}..{}, which it numbers from 0)",
                                                 s.message(), group, first, last)));
  }
  return s;
}

Status Bootstrap::Tiers::relayFromTop(Status s) {
  if (!s.isOk() && !relayed.exchange(true)) local->revokeWith(s);
  return s;
}

Status Bootstrap::Tiers::checkRoot(bool rootExitFails) {
  if (Status s = local->checkRoot(rootExitFails); !s) return relayFromLocal(std::move(s));
  if (!top) return Status::ok();
  return relayFromTop(top->checkRoot(rootExitFails));
}

void Bootstrap::Tiers::revoke() {
  relayed.store(true);  // this rank tells both of its sessions itself
  const Status why(
      Code::kRemoteError,
      fmt::format("bootstrap: rank {} revoked the communicator (trncclCommRevoke)", rank));
  if (top) top->revokeWith(why);
  local->revokeWith(why);
}

Result<std::vector<std::byte>> Bootstrap::Tiers::allGather(std::span<const std::byte> mine) {
  auto block = local->allGather(mine);
  if (!block) return relayFromLocal(block.status());
  std::vector<std::byte> table(mine.size() * static_cast<size_t>(nranks));
  if (leader()) {
    auto blocks = gatherBlocks(*top, *block);
    if (!blocks) return relayFromTop(blocks.status());
    size_t at = 0;
    for (const auto& b : *blocks) {
      if (at + b.size() > table.size()) return internalError("bootstrap: leaders' table overflows");
      std::copy(b.begin(), b.end(), table.begin() + static_cast<ptrdiff_t>(at));
      at += b.size();
    }
    if (at != table.size()) {
      return internalError("bootstrap: leaders' table of {} bytes, expected {}", at, table.size());
    }
  }
  // The leader is the group's first: its session rank 0.
  const std::span<const std::byte> handed =
      leader() ? std::span<const std::byte>(table) : std::span<const std::byte>();
  auto shared = local->broadcastFromFirst(handed);
  if (!shared) return relayFromLocal(shared.status());
  if (shared->size() != table.size()) {
    return internalError("bootstrap: group table of {} bytes, expected {}", shared->size(),
                         table.size());
  }
  return std::move(*shared);
}

Status Bootstrap::Tiers::barrier() {
  TRN_TRY(relayFromLocal(local->barrier()));
  if (leader()) TRN_TRY(relayFromTop(top->barrier()));
  return relayFromLocal(local->barrier());
}

Result<std::unique_ptr<Bootstrap>> Bootstrap::connectScalable(std::span<const UniqueId> ids,
                                                              int rank, int nranks,
                                                              std::span<const std::byte> info,
                                                              Deadline deadline) {
  if (ids.size() < 2) return connect(ids.front(), rank, nranks, info, deadline);
  const int groups = static_cast<int>(ids.size()) - 1;
  if (groups >= nranks) {
    return invalidArgument("bootstrap: {} unique ids for {} ranks (at most nranks)", ids.size(),
                           nranks);
  }
  auto tiers = std::make_unique<Tiers>();
  tiers->rank = rank;
  tiers->nranks = nranks;
  for (int r = 0; r < nranks; ++r) {
    const int g = static_cast<int>(static_cast<int64_t>(r) * groups / nranks);
    if (static_cast<int>(tiers->groupFirst.size()) == g) tiers->groupFirst.push_back(r);
  }
  tiers->groupFirst.push_back(nranks);
  tiers->group = static_cast<int>(static_cast<int64_t>(rank) * groups / nranks);
  const int first = tiers->groupFirst[tiers->group];
  const int size = tiers->groupFirst[tiers->group + 1] - first;
  const UniqueId& mine = ids[static_cast<size_t>(tiers->group) + 1];
  if (mine.fromEnv && rank == first) TRN_TRY(ensureRoot(mine));
  auto local = connect(mine, rank - first, size, info, deadline);
  if (!local) return local.status();
  tiers->local = std::move(*local);
  if (rank == first) {
    if (ids[0].fromEnv && rank == 0) TRN_TRY(ensureRoot(ids[0]));
    // The leaders' session carries no info of its own: the group tables travel below.
    auto top = connect(ids[0], tiers->group, groups, {}, deadline);
    if (!top) return top.status();
    tiers->top = std::move(*top);
  }
  TRN_INFO(kBoot, "bootstrap: rank {} of {} in group {} of {} (ranks {}..{}){}", rank, nranks,
           tiers->group, groups, first, first + size - 1, rank == first ? ", its leader" : "");
  // Every rank's info, through the tiers: sizes may differ, so as length-prefixed blocks.
  const std::vector<std::vector<std::byte>>& groupInfos = tiers->local->infos();
  std::vector<std::byte> packed;
  for (const auto& blob : groupInfos) {
    uint64_t n = blob.size();
    const auto* p = reinterpret_cast<const std::byte*>(&n);
    packed.insert(packed.end(), p, p + sizeof(n));
    packed.insert(packed.end(), blob.begin(), blob.end());
  }
  std::vector<std::byte> all;
  if (tiers->leader()) {
    auto blocks = gatherBlocks(*tiers->top, packed);
    if (!blocks) return blocks.status();
    for (const auto& b : *blocks) all.insert(all.end(), b.begin(), b.end());
  }
  auto shared = tiers->local->broadcastFromFirst(all);  // the leader's; the others' is empty
  if (!shared) return shared.status();
  const uint64_t allBytes = shared->size();
  for (size_t at = 0; at < allBytes;) {
    uint64_t n = 0;
    std::memcpy(&n, shared->data() + at, sizeof(n));
    at += sizeof(n);
    if (n > allBytes - at) return internalError("bootstrap: malformed info table");
    tiers->infos.emplace_back(shared->begin() + static_cast<ptrdiff_t>(at),
                              shared->begin() + static_cast<ptrdiff_t>(at + n));
    at += n;
  }
  if (static_cast<int>(tiers->infos.size()) != nranks) {
    return internalError("bootstrap: {} infos after the tiers, expected {}", tiers->infos.size(),
                         nranks);
  }
  return std::unique_ptr<Bootstrap>(new Bootstrap(std::move(tiers)));
}

}  // namespace trnccl::bootstrap
