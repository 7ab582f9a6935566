// torch.distributed's "trnccl" backend: a c10d::ProcessGroup over one trnccl communicator.
//
// Every operation checks its tensors first (a RuntimeError, nothing issued, if any is not a
// dense contiguous CPU tensor of the expected dtype and size), enqueues trnccl calls on the
// group's stream and returns a Work that the stream completes (work.h). Collectives without a
// trnccl counterpart are composed in trnccl groups: gather, scatter, all-to-all with unequal
// splits and list all-to-all from sends and receives; list all-gather and reduce-scatter
// through a flat scratch tensor and stream copies. See docs/TORCH.md.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <vector>

#include "comm.h"
#include "issuer.h"
#include "torch_version.h"
#include "work.h"

namespace torch_trnccl {

class ProcessGroupTrnccl : public c10d::ProcessGroup {
 public:
  ProcessGroupTrnccl(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     std::chrono::milliseconds timeout);
  // A group over `comm` (a shrunk one), whose rank and size are the communicator's.
  explicit ProcessGroupTrnccl(std::unique_ptr<Comm> comm);
  // Issues deferred sends and receives, then waits for the stream and frees the communicator.
  ~ProcessGroupTrnccl() override;

  const std::string getBackendName() const override { return "trnccl"; }
  int device() const { return comm_->device(); }
  // Recovery after a peer died (docs/RELIABILITY.md, "What to do after an error"): the group
  // ranks that failed, and a new group of the others over the shrunk communicator (this group
  // is revoked: its later operations raise). shrink is collective over the other ranks.
  std::vector<int> failedRanks() const { return comm_->failedRanks(); }
  c10::intrusive_ptr<ProcessGroupTrnccl> shrink(const std::vector<int>& excludeRanks);

  // Reductions (pg_reduce.cc).
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // Data movement (pg_gather.cc).
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;

  // All-to-all and point-to-point (pg_p2p.cc).
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;

 private:
  // What one operation hands to launch(): the tensors its Work reports and keeps alive, and
  // the trnccl calls to enqueue on the group's stream (which throw on failure).
  struct Op {
    c10d::OpType type;
    const char* title;
    std::vector<at::Tensor> outputs;
    std::vector<at::Tensor> keepAlive;
  };
  template <typename Issue>
  c10::intrusive_ptr<c10d::Work> launch(Op op, Issue issue);
  c10::intrusive_ptr<Work> makeWork(Op op) const;
  // send and recv: deferred (issuer.h).
  c10::intrusive_ptr<c10d::Work> deferP2p(bool send, std::vector<at::Tensor>& tensors, int peer);

  void checkRoot(int64_t root, const char* api) const;
  void checkPeer(int peer, const char* api) const;
  // Enqueues a host-to-host copy of `bytes` on the group's stream.
  void copyOnStream(void* dst, const void* src, size_t bytes) const;

  std::unique_ptr<Comm> comm_;
  std::shared_ptr<Issuer> issuer_;  // works of deferred operations hold it weakly
};

template <typename Issue>
c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::launch(Op op, Issue issue) {
  // Outputs are kept alive too: the stream writes them until the callback has run.
  std::vector<at::Tensor> keep = std::move(op.keepAlive);
  keep.insert(keep.end(), op.outputs.begin(), op.outputs.end());
  auto work =
      c10::make_intrusive<Work>(rank_, op.type, op.title, std::move(op.outputs), std::move(keep),
                                comm_->get(), comm_->timeout() + std::chrono::seconds(10));
  try {
    issue(comm_->get(), comm_->stream());
  } catch (...) {
    // Whatever was enqueued before the failure still needs its tensors until it has run.
    work->completeAfter(comm_->stream());
    throw;
  }
  work->completeAfter(comm_->stream());
  return work;
}

}  // namespace torch_trnccl
