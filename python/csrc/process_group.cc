#include "process_group.h"

#include <pybind11/pybind11.h>

#include <string>

#include "errors.h"

namespace torch_trnccl {

ProcessGroupTrnccl::ProcessGroupTrnccl(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                       int size, std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size),
      comm_(std::make_unique<Comm>(store, rank, size, timeout)),
      issuer_(std::make_shared<Issuer>(comm_->get(), comm_->stream())) {
  init();  // c10d's logging of the new group
}

namespace {

int attribute(trncclResult_t (*get)(const trncclComm_t, int*), const Comm& comm) {
  int value = 0;
  check(get(comm.get(), &value), comm.get(), "trncclCommCount/UserRank");
  return value;
}

}  // namespace

ProcessGroupTrnccl::ProcessGroupTrnccl(std::unique_ptr<Comm> comm)
    : c10d::ProcessGroup(attribute(trncclCommUserRank, *comm), attribute(trncclCommCount, *comm)),
      comm_(std::move(comm)),
      issuer_(std::make_shared<Issuer>(comm_->get(), comm_->stream())) {
  init();
}

c10::intrusive_ptr<ProcessGroupTrnccl> ProcessGroupTrnccl::shrink(
    const std::vector<int>& excludeRanks) {
  return c10::make_intrusive<ProcessGroupTrnccl>(comm_->shrink(excludeRanks));
}

ProcessGroupTrnccl::~ProcessGroupTrnccl() {
  issuer_->close();
  // ~Comm waits for the stream, whose callbacks release tensors; releasing one with a Python
  // object takes the GIL. c10d drops its last reference to a group from Python (destroy, or a
  // DDP Reducer's destructor), holding the GIL: wait without it.
  if (Py_IsInitialized() && PyGILState_Check()) {
    pybind11::gil_scoped_release noGil;
    comm_.reset();
  } else {
    comm_.reset();
  }
}

c10::intrusive_ptr<Work> ProcessGroupTrnccl::makeWork(Op op) const {
  // Outputs are kept alive too: the stream writes them until the callback has run.
  std::vector<at::Tensor> keep = std::move(op.keepAlive);
  keep.insert(keep.end(), op.outputs.begin(), op.outputs.end());
  return c10::make_intrusive<Work>(rank_, op.type, op.title, std::move(op.outputs), std::move(keep),
                                   comm_->get(), comm_->timeout() + std::chrono::seconds(10));
}

void ProcessGroupTrnccl::checkRoot(int64_t root, const char* api) const {
  if (root < 0 || root >= size_) {
    fail(std::string(api) + ": root rank " + std::to_string(root) + " not in [0, " +
         std::to_string(size_) + ")");
  }
}

void ProcessGroupTrnccl::checkPeer(int peer, const char* api) const {
  checkRoot(peer, api);
  if (peer == rank_) fail(std::string(api) + ": peer " + std::to_string(peer) + " is this rank");
}

void ProcessGroupTrnccl::copyOnStream(void* dst, const void* src, size_t bytes) const {
  checkRt(trnrtMemcpyAsync(dst, src, bytes, trnrtMemcpyHostToHost, comm_->stream()),
          "trnrtMemcpyAsync");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::barrier(const c10d::BarrierOptions& /*opts*/) {
  // As ProcessGroupNCCL: an all-reduce of one element, which no rank finishes before all began.
  at::Tensor token = at::zeros({1}, at::kByte);
  return launch({c10d::OpType::BARRIER, "trnccl:barrier", {}, {token}},
                [&](trncclComm_t comm, trnrtStream_t stream) {
                  check(trncclAllReduce(token.data_ptr(), token.data_ptr(), 1, trncclUint8,
                                        trncclSum, comm, stream),
                        comm, "barrier: trncclAllReduce");
                });
}

}  // namespace torch_trnccl
