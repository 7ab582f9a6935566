// The API's communicator handle and the error plumbing of the front door.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "algorithms/algorithm.h"
#include "algorithms/p2p/batch.h"
#include "api/redop.h"
#include "comm/communicator.h"
#include "common/status.h"
#include "trnccl/trnccl.h"

struct trncclComm {
  std::unique_ptr<trnccl::comm::Communicator> impl;  // set once init succeeded
  std::atomic<bool> initializing{false};             // non-blocking init still running
  std::thread initThread;
  std::mutex mu;
  trnccl::Status initStatus;  // outcome of a non-blocking init
  bool finalized = false;
  int nranks = 0;
  int rank = 0;
  int device = 0;
  trnccl::api::RedOpTable redOps;  // trncclRedOpCreatePreMulSum's operators
};

namespace trnccl::api {

// How long an abort or revoke lets running work notice before giving up on it.
inline constexpr std::chrono::seconds kAbortGrace{5};

trncclResult_t toResult(Code code);
// Records `status` as this thread's last error (logged at WARN) and returns its code; inside a
// group, also makes trncclGroupEnd fail.
trncclResult_t fail(const Status& status);
// Clears nothing; returns trncclSuccess (symmetry with fail at call sites).
inline trncclResult_t succeed() { return trncclSuccess; }
// The communicator behind a handle, or an error if it cannot take work. Every call's path:
// the checks inline, the reason (usableOrWhy) only when one fails.
Result<comm::Communicator*> usableOrWhy(trncclComm_t comm);
inline Result<comm::Communicator*> usable(trncclComm_t comm) {
  if (comm != nullptr && !comm->initializing.load() && comm->impl && !comm->finalized &&
      !comm->impl->revoked()) {
    return comm->impl.get();
  }
  return usableOrWhy(comm);
}
// The communicator behind a handle that initialised, revoked or failed or not (what
// trncclCommShrink, trncclCommRevoke and trncclCommGetFailedRanks take).
Result<comm::Communicator*> initialised(trncclComm_t comm);

// A config from the user: made by TRNCCL_CONFIG_INITIALIZER, values in range (NULL is fine).
Status checkConfig(const trncclConfig_t* config);
// The options of a new communicator: `config` over the environment and defaults, or with
// config NULL, `inherited` (a parent's) if given.
comm::Config resolve(const trncclConfig_t* config, const comm::Config* inherited);
// Runs a communicator's init and stores the outcome in the handle (blocking or deferred).
void runInit(trncclComm* handle, bootstrap::UniqueId id, comm::Config config);
// Initialises (blocking) rank `rank` of `nranks` of a communicator made from `parent` (split,
// shrink) on the parent's device; on success stores it in *newcomm.
trncclResult_t initChild(const comm::Communicator& parent, int nranks, int rank,
                         bootstrap::UniqueId id, comm::Config config, trncclComm_t* newcomm);

// Groups (group.cc): inside trncclGroupStart/End, calls are recorded and issued at the end.
bool inGroup();
void recordCollective(const char* what, trncclComm_t comm, algorithms::CollArgs args,
                      trnrtStream_t stream, std::optional<PreMul> premul);
void recordP2p(trncclComm_t comm, const algorithms::p2p::Op& op, trnrtStream_t stream);
void recordInit(trncclComm* handle, const bootstrap::UniqueId& id, const comm::Config& config);
// An error of a call inside the group; trncclGroupEnd reports it and issues nothing.
void recordGroupError(const Status& status);

}  // namespace trnccl::api
