#include "comm.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "errors.h"

namespace torch_trnccl {
namespace {

const char* const kIdKey = "trnccl_unique_id";

int envInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  long parsed = std::strtol(value, &end, 10);
  return (*end == '\0' && parsed >= 0 && parsed <= INT_MAX) ? static_cast<int>(parsed) : fallback;
}

// TRNCCL_TIMEOUT_MS, when set, is the library's own choice; else the process group's timeout.
std::chrono::milliseconds libraryTimeout(std::chrono::milliseconds groupTimeout) {
  int fromEnv = envInt("TRNCCL_TIMEOUT_MS", 0);
  if (fromEnv > 0) return std::chrono::milliseconds(fromEnv);
  if (groupTimeout.count() <= 0 || groupTimeout.count() > INT_MAX) {
    return std::chrono::milliseconds(INT_MAX);
  }
  return groupTimeout;
}

trncclUniqueId exchangeId(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                          std::chrono::milliseconds timeout) {
  trncclUniqueId id;
  if (rank == 0) {
    check(trncclGetUniqueId(&id), nullptr, "trncclGetUniqueId");
    const auto* bytes = reinterpret_cast<const uint8_t*>(id.internal);
    store->set(kIdKey, std::vector<uint8_t>(bytes, bytes + sizeof(id.internal)));
    return id;
  }
  store->wait({kIdKey}, timeout);
  std::vector<uint8_t> bytes = store->get(kIdKey);
  if (bytes.size() != sizeof(id.internal)) {
    fail("the store's " + std::string(kIdKey) + " has " + std::to_string(bytes.size()) +
         " bytes, expected " + std::to_string(sizeof(id.internal)));
  }
  std::memcpy(id.internal, bytes.data(), bytes.size());
  return id;
}

}  // namespace

int Comm::processDevice(int rank) {
  static std::once_flag once;
  static int device = 0;
  std::call_once(once, [rank] {
    int count = 1;
    checkRt(trnrtGetDeviceCount(&count), "trnrtGetDeviceCount");
    int local = envInt("LOCAL_RANK", -1);
    if (local < 0) local = envInt("OMPI_COMM_WORLD_LOCAL_RANK", -1);
    if (local < 0) local = envInt("MPI_LOCALRANKID", -1);
    if (local < 0) local = rank;
    device = local % count;
  });
  return device;
}

Comm::Comm(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
           std::chrono::milliseconds timeout)
    : device_(processDevice(rank)), timeout_(libraryTimeout(timeout)) {
  checkRt(trnrtSetDevice(device_), "trnrtSetDevice");
  trncclUniqueId id = exchangeId(store, rank, timeout_);
  trncclConfig_t config = TRNCCL_CONFIG_INITIALIZER;
  config.timeoutMs = static_cast<int>(timeout_.count());
  check(trncclCommInitRankConfig(&comm_, size, id, rank, &config), nullptr,
        "trncclCommInitRank (rank " + std::to_string(rank) + " of " + std::to_string(size) + ")");
  if (rank == 0) {
    try {
      store->deleteKey(kIdKey);
    } catch (const std::exception&) {
      // A store without deleteKey: the key stays, harmless unless the prefix is reused.
    }
  }
  if (trnrtError_t e = trnrtStreamCreate(&stream_); e != trnrtSuccess) {
    trncclCommDestroy(comm_);
    checkRt(e, "trnrtStreamCreate");
  }
}

Comm::Comm(trncclComm_t comm, int device, std::chrono::milliseconds timeout)
    : comm_(comm), device_(device), timeout_(timeout) {
  if (trnrtError_t e = trnrtStreamCreate(&stream_); e != trnrtSuccess) {
    trncclCommDestroy(comm_);
    checkRt(e, "trnrtStreamCreate");
  }
}

std::vector<int> Comm::failedRanks() const {
  int count = 0;
  check(trncclCommCount(comm_, &count), comm_, "trncclCommCount");
  std::vector<int> failed(static_cast<size_t>(count));
  int n = 0;
  check(trncclCommGetFailedRanks(comm_, failed.data(), &n), comm_, "trncclCommGetFailedRanks");
  failed.resize(static_cast<size_t>(n));
  return failed;
}

std::unique_ptr<Comm> Comm::shrink(const std::vector<int>& excludeRanks) const {
  checkRt(trnrtSetDevice(device_), "trnrtSetDevice");
  std::vector<int> exclude = excludeRanks;
  trncclConfig_t config = TRNCCL_CONFIG_INITIALIZER;
  config.timeoutMs = static_cast<int>(timeout_.count());
  trncclComm_t shrunk = nullptr;
  // The error is the call's (thread-local): the new communicator does not exist.
  check(trncclCommShrink(comm_, exclude.data(), static_cast<int>(exclude.size()), &shrunk, &config,
                         TRNCCL_SHRINK_ABORT),
        nullptr, "trncclCommShrink");
  return std::make_unique<Comm>(shrunk, device_, timeout_);
}

Comm::~Comm() {
  trnrtStreamSynchronize(stream_);  // its error is the communicator's, reported by each work
  trncclResult_t asyncError = trncclSuccess;
  trncclCommGetAsyncError(comm_, &asyncError);
  if (asyncError == trncclSuccess) {
    trncclCommDestroy(comm_);
  } else {
    trncclCommAbort(comm_);
  }
  trnrtStreamDestroy(stream_);
}

}  // namespace torch_trnccl
