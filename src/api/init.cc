// Communicator lifecycle: ids, init (blocking and not), split, finalize, destroy, abort.
#include <vector>

#include "api/handle.h"
#include "bootstrap/bootstrap.h"
#include "common/log.h"
#include "common/thread.h"
#include "device/device_api.h"

using trnccl::Code;
using trnccl::Status;
using trnccl::api::fail;
using trnccl::api::kAbortGrace;
using trnccl::api::succeed;

Status trnccl::api::checkConfig(const trncclConfig_t* config) {
  if (config == nullptr) return Status::ok();
  if (config->magic != TRNCCL_CONFIG_MAGIC || config->size != sizeof(trncclConfig_t)) {
    return trnccl::invalidArgument(
        "config was not initialized with TRNCCL_CONFIG_INITIALIZER (magic {:#x}, size {})",
        config->magic, config->size);
  }
  if (config->blocking != 0 && config->blocking != 1) {
    return trnccl::invalidArgument("config->blocking must be 0 or 1, got {}", config->blocking);
  }
  if (config->timeoutMs < 0) {
    return trnccl::invalidArgument("config->timeoutMs must be >= 0, got {}", config->timeoutMs);
  }
  if (config->deterministic < -1 || config->deterministic > 1) {
    return trnccl::invalidArgument("config->deterministic must be -1 (unset), 0 or 1, got {}",
                                   config->deterministic);
  }
  return Status::ok();
}

trnccl::comm::Config trnccl::api::resolve(const trncclConfig_t* config,
                                          const trnccl::comm::Config* inherited) {
  if (config == nullptr) {
    return inherited != nullptr ? *inherited : trnccl::comm::resolveConfig(1, 0, nullptr, nullptr);
  }
  return trnccl::comm::resolveConfig(config->blocking, config->timeoutMs, config->topology,
                                     config->transports, config->deterministic);
}

void trnccl::api::runInit(trncclComm* handle, trnccl::bootstrap::UniqueId id,
                          trnccl::comm::Config cfg) {
  auto c = trnccl::comm::Communicator::init(id, handle->nranks, handle->rank, handle->device, cfg);
  std::lock_guard<std::mutex> lock(handle->mu);
  if (c) {
    handle->impl = std::move(*c);
  } else {
    handle->initStatus = c.status();
  }
  handle->initializing.store(false);
}

trncclResult_t trnccl::api::initChild(const trnccl::comm::Communicator& parent, int nranks,
                                      int rank, trnccl::bootstrap::UniqueId id,
                                      trnccl::comm::Config cfg, trncclComm_t* newcomm) {
  cfg.blocking = true;
  auto* handle = new trncclComm();
  handle->nranks = nranks;
  handle->rank = rank;
  handle->device = parent.device();
  runInit(handle, id, cfg);
  if (!handle->impl) {
    Status s = handle->initStatus;
    delete handle;
    return fail(s);
  }
  *newcomm = handle;
  return trncclSuccess;
}

namespace {

// Waits for running work, then frees. After an abort, work fails fast; if a task still holds the
// communicator after the grace period, leaking it is safer than freeing it under the task.
trncclResult_t release(trncclComm_t comm, bool abort) {
  if (comm->initThread.joinable()) comm->initThread.join();
  trncclResult_t result = trncclSuccess;
  if (comm->impl) {
    auto& impl = *comm->impl;
    if (abort) impl.abort();
    Status idle = impl.waitIdle(trnccl::Deadline::after(
        abort ? std::chrono::duration_cast<std::chrono::milliseconds>(kAbortGrace)
              : impl.config().opTimeout));
    if (!idle && !abort) {
      impl.abort();
      idle = impl.waitIdle(trnccl::Deadline::after(kAbortGrace));
      result = fail(idle.isOk() ? Status(Code::kTimeout,
                                         "destroy: work did not finish in time; "
                                         "aborted it")
                                : idle);
    }
    if (!idle) {
      TRN_WARN(kInit, "rank {}: leaking a communicator whose work never ended", impl.rank());
      static_cast<void>(comm->impl.release());
      return result;
    }
  }
  delete comm;
  return result;
}

}  // namespace

extern "C" {

trncclResult_t trncclGetVersion(int* version) {
  if (version == nullptr) return fail(trnccl::invalidArgument("trncclGetVersion: version is NULL"));
  *version = TRNCCL_VERSION_CODE;
  return succeed();
}

trncclResult_t trncclGetUniqueId(trncclUniqueId* uniqueId) {
  if (uniqueId == nullptr)
    return fail(trnccl::invalidArgument("trncclGetUniqueId: uniqueId is NULL"));
  auto id = trnccl::bootstrap::createUniqueId();
  if (!id) return fail(id.status());
  id->encode(uniqueId->internal);
  return succeed();
}

}  // extern "C"

namespace {

// trncclCommInitRankConfig's checks; `what` names the call in messages.
trnccl::Status checkInit(const char* what, trncclComm_t* comm, int nranks, int rank,
                         const trncclConfig_t* config) {
  if (comm == nullptr) return trnccl::invalidArgument("{}: comm is NULL", what);
  *comm = nullptr;
  if (nranks < 1) return trnccl::invalidArgument("{}: nranks {} < 1", what, nranks);
  if (rank < 0 || rank >= nranks) {
    return trnccl::invalidArgument("{}: rank {} not in [0, {})", what, rank, nranks);
  }
  return trnccl::api::checkConfig(config);
}

// Creates the handle and runs (or defers) the init of a checked call.
trncclResult_t initChecked(trncclComm_t* comm, int nranks, int rank, trnccl::bootstrap::UniqueId id,
                           trncclConfig_t* config);

}  // namespace

extern "C" {

trncclResult_t trncclCommInitRankConfig(trncclComm_t* comm, int nranks, trncclUniqueId commId,
                                        int rank, trncclConfig_t* config) {
  if (Status s = checkInit("trncclCommInitRank", comm, nranks, rank, config); !s) return fail(s);
  auto id = trnccl::bootstrap::UniqueId::decode(commId.internal);
  if (!id) return fail(id.status());
  return initChecked(comm, nranks, rank, std::move(*id), config);
}

trncclResult_t trncclCommInitRankScalable(trncclComm_t* newcomm, int nranks, int myrank, int nId,
                                          trncclUniqueId* commIds, trncclConfig_t* config) {
  constexpr const char* kWhat = "trncclCommInitRankScalable";
  if (Status s = checkInit(kWhat, newcomm, nranks, myrank, config); !s) return fail(s);
  if (commIds == nullptr) return fail(trnccl::invalidArgument("{}: commIds is NULL", kWhat));
  if (nId < 1 || nId > nranks) {
    return fail(trnccl::invalidArgument("{}: nId {} not in [1, nranks {}]", kWhat, nId, nranks));
  }
  std::vector<trnccl::bootstrap::UniqueId> ids;
  for (int i = 0; i < nId; ++i) {
    auto id = trnccl::bootstrap::UniqueId::decode(commIds[i].internal);
    if (!id) return fail(id.status());
    for (int j = 0; j < i; ++j) {
      if (ids[j].host == id->host && ids[j].port == id->port) {
        return fail(trnccl::invalidArgument(
            "{}: commIds[{}] and commIds[{}] name the same root {}:{} (each id must come from "
            "its own trncclGetUniqueId; TRNCCL_COMM_ID gives every caller the same one)",
            kWhat, j, i, id->host, id->port));
      }
    }
    ids.push_back(std::move(*id));
  }
  trnccl::bootstrap::UniqueId first = ids.front();
  if (nId > 1) first.scalable = std::move(ids);
  return initChecked(newcomm, nranks, myrank, std::move(first), config);
}

}  // extern "C"

namespace {

trncclResult_t initChecked(trncclComm_t* comm, int nranks, int rank,
                           trnccl::bootstrap::UniqueId idValue, trncclConfig_t* config) {
  auto* id = &idValue;
  trnccl::comm::Config cfg = trnccl::api::resolve(config, nullptr);
  auto* handle = new trncclComm();
  handle->nranks = nranks;
  handle->rank = rank;
  handle->device = trnccl::device::currentDevice();
  if (trnccl::api::inGroup()) {  // initialised concurrently with the group's others at GroupEnd
    handle->initializing.store(true);
    trnccl::api::recordInit(handle, *id, cfg);
    *comm = handle;
    return succeed();
  }
  if (!cfg.blocking) {
    handle->initializing.store(true);
    handle->initThread =
        trnccl::startThread([handle, id = *id, cfg] { trnccl::api::runInit(handle, id, cfg); });
    *comm = handle;
    return trncclInProgress;
  }
  trnccl::api::runInit(handle, *id, cfg);
  if (!handle->impl) {
    Status s = handle->initStatus;
    delete handle;
    return fail(s);
  }
  *comm = handle;
  return succeed();
}

}  // namespace

extern "C" {

trncclResult_t trncclCommInitRank(trncclComm_t* comm, int nranks, trncclUniqueId commId, int rank) {
  return trncclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

trncclResult_t trncclCommInitAll(trncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr) return fail(trnccl::invalidArgument("trncclCommInitAll: comms is NULL"));
  if (ndev < 1) return fail(trnccl::invalidArgument("trncclCommInitAll: ndev {} < 1", ndev));
  int count = 0;
  trnrtGetDeviceCount(&count);
  for (int i = 0; i < ndev; ++i) {
    int dev = devlist ? devlist[i] : i;
    if (dev < 0 || dev >= count) {
      return fail(
          trnccl::invalidArgument("trncclCommInitAll: device {} not in [0, {})", dev, count));
    }
  }
  trncclUniqueId id;
  if (trncclResult_t r = trncclGetUniqueId(&id); r != trncclSuccess) return r;
  std::vector<trncclResult_t> results(ndev, trncclSuccess);
  std::vector<std::string> errors(ndev);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    threads.push_back(trnccl::startThread([&, i] {
      trnrtSetDevice(devlist ? devlist[i] : i);
      results[i] = trncclCommInitRank(&comms[i], ndev, id, i);
      if (results[i] != trncclSuccess) errors[i] = trncclGetLastError(nullptr);
    }));
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i) {
    if (results[i] == trncclSuccess) continue;
    for (int j = 0; j < ndev; ++j) {
      if (comms[j] != nullptr) trncclCommAbort(comms[j]);
      comms[j] = nullptr;
    }
    return fail(Status(static_cast<Code>(results[i]),
                       fmt::format("trncclCommInitAll: rank {}: {}", i, errors[i])));
  }
  return succeed();
}

trncclResult_t trncclCommFinalize(trncclComm_t comm) {
  auto c = trnccl::api::usable(comm);
  if (!c) return fail(c.status());
  Status idle = (*c)->waitIdle(trnccl::Deadline::after((*c)->config().opTimeout));
  comm->finalized = true;
  if (!idle) return fail(idle);
  if (Status async = (*c)->asyncError(); !async) return fail(async);
  return succeed();
}

trncclResult_t trncclCommDestroy(trncclComm_t comm) {
  if (comm == nullptr) return succeed();  // as NCCL: destroying NULL is a no-op
  return release(comm, false);
}

trncclResult_t trncclCommAbort(trncclComm_t comm) {
  if (comm == nullptr) return succeed();
  return release(comm, true);
}

trncclResult_t trncclCommGetAsyncError(trncclComm_t comm, trncclResult_t* asyncError) {
  if (comm == nullptr || asyncError == nullptr) {
    return fail(trnccl::invalidArgument("trncclCommGetAsyncError: NULL argument"));
  }
  std::lock_guard<std::mutex> lock(comm->mu);
  if (comm->initializing.load()) {
    *asyncError = trncclInProgress;
  } else if (!comm->impl) {
    *asyncError = trnccl::api::toResult(comm->initStatus.code());
  } else {
    comm->impl->poll();  // a failure or revoke the root reported since
    *asyncError = trnccl::api::toResult(comm->impl->asyncError().code());
  }
  return succeed();
}

trncclResult_t trncclCommCount(const trncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr)
    return fail(trnccl::invalidArgument("trncclCommCount: NULL argument"));
  *count = comm->nranks;
  return succeed();
}

trncclResult_t trncclCommDevice(const trncclComm_t comm, int* device) {
  if (comm == nullptr || device == nullptr)
    return fail(trnccl::invalidArgument("trncclCommDevice: NULL argument"));
  *device = comm->device;
  return succeed();
}

trncclResult_t trncclCommUserRank(const trncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr)
    return fail(trnccl::invalidArgument("trncclCommUserRank: NULL argument"));
  *rank = comm->rank;
  return succeed();
}

}  // extern "C"
