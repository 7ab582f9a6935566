// One trnccl communicator and the stream its work runs on, for one process group.
//
// Bootstrap through the c10d store, as ProcessGroupNCCL does: group rank 0 creates the
// trncclUniqueId (starting the bootstrap root in its process) and sets it in the group's
// (prefixed) store; the others wait for it there. Rank 0 deletes the key once init succeeded,
// which implies every rank has read it, so a later group under the same prefix gets its own.
//
// Every process drives one emulated NeuronCore for all its groups: LOCAL_RANK (torchrun), else
// OMPI_COMM_WORLD_LOCAL_RANK / MPI_LOCALRANKID, else the rank in the first group it creates
// (the default group), modulo the device count.
#pragma once

#include <chrono>
#include <memory>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "trnccl/trnccl.h"

namespace torch_trnccl {

class Comm {
 public:
  // Collective over the `size` ranks of the store's group. `timeout` bounds the wait for the id
  // in the store, init and every collective (trncclConfig_t::timeoutMs) unless TRNCCL_TIMEOUT_MS
  // is set, which then wins, as for any trnccl program.
  Comm(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
       std::chrono::milliseconds timeout);
  // Adopts `comm` (made by trncclCommShrink) and gives it its own stream.
  Comm(trncclComm_t comm, int device, std::chrono::milliseconds timeout);
  // Waits for the stream (its work is bounded by the library's deadlines), then destroys the
  // communicator, or aborts it if it failed, and the stream.
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  trncclComm_t get() const { return comm_; }
  trnrtStream_t stream() const { return stream_; }
  int device() const { return device_; }
  // The deadline the library applies to every collective of this communicator.
  std::chrono::milliseconds timeout() const { return timeout_; }

  // The ranks of this communicator whose process is gone (trncclCommGetFailedRanks).
  std::vector<int> failedRanks() const;
  // The communicator of the other ranks: trncclCommShrink(TRNCCL_SHRINK_ABORT), which revokes
  // this one first (its later work fails; it can still be destroyed). Collective over them.
  std::unique_ptr<Comm> shrink(const std::vector<int>& excludeRanks) const;

  // The emulated device this process drives (chosen by the first Comm created).
  static int processDevice(int rank);

 private:
  trncclComm_t comm_ = nullptr;
  trnrtStream_t stream_ = nullptr;
  int device_ = 0;
  std::chrono::milliseconds timeout_;
};

}  // namespace torch_trnccl
