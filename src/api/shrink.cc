// Recovery at the front door: trncclCommRevoke, trncclCommGetFailedRanks and trncclCommShrink
// (NCCL 2.27/2.28's ncclCommShrink and ncclCommRevoke; where we differ, docs/RELIABILITY.md
// "What to do after an error" says so). The work is the communicator's (src/comm/recovery.cc)
// and the bootstrap's (src/bootstrap/recovery.h); this file checks arguments and builds the new
// communicator like trncclCommSplit does.
#include <algorithm>
#include <vector>

#include "api/handle.h"

using trnccl::Code;
using trnccl::Status;
using trnccl::api::fail;

namespace {

// The parent of a shrink or the target of a revoke: initialised, not finalized.
trnccl::Result<trnccl::comm::Communicator*> recoverable(trncclComm_t comm, const char* what) {
  auto c = trnccl::api::initialised(comm);
  if (!c) return Status(c.status().code(), fmt::format("{}: {}", what, c.status().message()));
  if (comm->finalized) {
    return trnccl::makeError(Code::kInvalidUsage, "{}: communicator was finalized", what);
  }
  return c;
}

// Every rank in [0, nranks), no duplicates, not this rank's: the list, ascending.
trnccl::Result<std::vector<int>> excludedRanks(const int* list, int count, int nranks, int self) {
  if (count < 0 || count > nranks) {
    return trnccl::invalidArgument("trncclCommShrink: excludeRanksCount {} not in [0, {}]", count,
                                   nranks);
  }
  if (count > 0 && list == nullptr) {
    return trnccl::invalidArgument("trncclCommShrink: excludeRanksList is NULL with count {}",
                                   count);
  }
  std::vector<int> ranks(list, list + count);
  std::sort(ranks.begin(), ranks.end());
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= nranks) {
      return trnccl::invalidArgument("trncclCommShrink: excluded rank {} not in [0, {})", ranks[i],
                                     nranks);
    }
    if (i > 0 && ranks[i] == ranks[i - 1]) {
      return trnccl::invalidArgument("trncclCommShrink: rank {} is excluded twice", ranks[i]);
    }
    if (ranks[i] == self) {
      return trnccl::invalidArgument(
          "trncclCommShrink: rank {} is in its own excludeRanksList (an excluded rank does not "
          "call trncclCommShrink)",
          self);
    }
  }
  return ranks;
}

// Revokes and waits (bounded) until no work of the communicator runs any more.
Status revokeAndQuiesce(trnccl::comm::Communicator& c, const char* what) {
  c.revoke();
  Status idle = c.waitIdle(trnccl::Deadline::after(trnccl::api::kAbortGrace));
  if (!idle) return Status(Code::kTimeout, fmt::format("{}: {}", what, idle.message()));
  return Status::ok();
}

}  // namespace

extern "C" {

trncclResult_t trncclCommRevoke(trncclComm_t comm, int revokeFlags) {
  auto c = recoverable(comm, "trncclCommRevoke");
  if (!c) return fail(c.status());
  if (revokeFlags != TRNCCL_REVOKE_DEFAULT) {
    return fail(
        trnccl::invalidArgument("trncclCommRevoke: revokeFlags {} is not "
                                "TRNCCL_REVOKE_DEFAULT (0)",
                                revokeFlags));
  }
  Status s = revokeAndQuiesce(**c, "trncclCommRevoke");
  return s ? trncclSuccess : fail(s);
}

trncclResult_t trncclCommGetFailedRanks(trncclComm_t comm, int* failedRanks, int* failedCount) {
  if (failedCount == nullptr) {
    return fail(trnccl::invalidArgument("trncclCommGetFailedRanks: failedCount is NULL"));
  }
  *failedCount = 0;
  auto c = recoverable(comm, "trncclCommGetFailedRanks");
  if (!c) return fail(c.status());
  std::vector<int> failed = (*c)->failedRanks();
  if (failedRanks != nullptr) std::copy(failed.begin(), failed.end(), failedRanks);
  *failedCount = static_cast<int>(failed.size());
  return trncclSuccess;
}

trncclResult_t trncclCommShrink(trncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                trncclComm_t* newcomm, trncclConfig_t* config, int shrinkFlags) {
  if (newcomm == nullptr) return fail(trnccl::invalidArgument("trncclCommShrink: newcomm is NULL"));
  *newcomm = nullptr;
  auto parent = recoverable(comm, "trncclCommShrink");
  if (!parent) return fail(parent.status());
  trnccl::comm::Communicator& p = **parent;
  if (shrinkFlags != TRNCCL_SHRINK_DEFAULT && shrinkFlags != TRNCCL_SHRINK_ABORT) {
    return fail(
        trnccl::invalidArgument("trncclCommShrink: shrinkFlags {} is neither "
                                "TRNCCL_SHRINK_DEFAULT (0) nor TRNCCL_SHRINK_ABORT (1)",
                                shrinkFlags));
  }
  auto excluded = excludedRanks(excludeRanksList, excludeRanksCount, p.nranks(), p.rank());
  if (!excluded) return fail(excluded.status());
  if (Status s = trnccl::api::checkConfig(config); !s) {
    return fail(Status(s.code(), "trncclCommShrink: " + s.message()));
  }
  if (trnccl::api::inGroup()) {
    return fail(
        Status(Code::kInvalidUsage, "trncclCommShrink: not supported inside trncclGroupStart/End"));
  }
  if (shrinkFlags == TRNCCL_SHRINK_ABORT) {
    if (Status s = revokeAndQuiesce(p, "trncclCommShrink"); !s) return fail(s);
  } else if (Status idle = p.waitIdle(trnccl::Deadline::after(p.config().opTimeout)); !idle) {
    return fail(Status(Code::kInvalidUsage,
                       "trncclCommShrink: the communicator's work did not finish (" +
                           idle.message() + "); after an error, use TRNCCL_SHRINK_ABORT"));
  }
  trnccl::comm::Config cfg = trnccl::api::resolve(config, &p.config());
  auto id = p.shrinkId(*excluded, trnccl::Deadline::after(cfg.initTimeout));
  if (!id) return fail(id.status());
  // Survivors keep their order: a rank's new number is its old one less the excluded below it.
  int below = static_cast<int>(std::lower_bound(excluded->begin(), excluded->end(), p.rank()) -
                               excluded->begin());
  return trnccl::api::initChild(p, p.nranks() - static_cast<int>(excluded->size()),
                                p.rank() - below, *id, cfg, newcomm);
}

}  // extern "C"
