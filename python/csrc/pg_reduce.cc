// Reductions: all-reduce (single and coalesced), reduce, reduce-scatter (list and flat).
#include <string>

#include "errors.h"
#include "group.h"
#include "process_group.h"
#include "reduce_op.h"
#include "tensors.h"

namespace torch_trnccl {

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  const char* api = "all_reduce";
  const at::Tensor& t = single(tensors, api);
  Buffer b = reducible(t, api);
  ReduceOp op(opts.reduceOp, t.scalar_type(), comm_->get(), api);
  return launch({c10d::OpType::ALLREDUCE, "trnccl:all_reduce", tensors, {}},
                [&](trncclComm_t comm, trnrtStream_t stream) {
                  if (b.count == 0) return;
                  check(trncclAllReduce(b.data, b.data, b.count, b.type, op.get(), comm, stream),
                        comm, "all_reduce: trncclAllReduce");
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  const char* api = "all_reduce_coalesced";
  std::vector<Buffer> buffers;
  std::vector<std::unique_ptr<ReduceOp>> ops;
  for (size_t i = 0; i < tensors.size(); ++i) {
    checkDense(tensors[i], api, "tensors[" + std::to_string(i) + "]");
    buffers.push_back(reducible(tensors[i], api));
    ops.push_back(
        std::make_unique<ReduceOp>(opts.reduceOp, tensors[i].scalar_type(), comm_->get(), api));
  }
  return launch(
      {c10d::OpType::ALLREDUCE_COALESCED, "trnccl:all_reduce_coalesced", tensors, {}},
      [&](trncclComm_t comm, trnrtStream_t stream) {
        inGroup(comm, [&] {
          for (size_t i = 0; i < buffers.size(); ++i) {
            const Buffer& b = buffers[i];
            if (b.count == 0) continue;
            check(trncclAllReduce(b.data, b.data, b.count, b.type, ops[i]->get(), comm, stream),
                  comm, "all_reduce_coalesced: trncclAllReduce");
          }
        });
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  const char* api = "reduce";
  const at::Tensor& t = single(tensors, api);
  checkRoot(opts.rootRank, api);
  if (opts.rootTensor != 0) fail("reduce: rootTensor must be 0 (one tensor per process)");
  Buffer b = reducible(t, api);
  ReduceOp op(opts.reduceOp, t.scalar_type(), comm_->get(), api);
  const int root = static_cast<int>(opts.rootRank);
  return launch({c10d::OpType::REDUCE, "trnccl:reduce", tensors, {}},
                [&](trncclComm_t comm, trnrtStream_t stream) {
                  if (b.count == 0) return;
                  check(trncclReduce(b.data, b.data, b.count, b.type, op.get(), root, comm, stream),
                        comm, "reduce: trncclReduce");
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const char* api = "reduce_scatter";
  const at::Tensor& out = single(outputs, api);
  if (inputs.size() != 1) fail("reduce_scatter: expected one input list");
  checkLike(inputs[0], size_, out, api, "input_list");
  Buffer ob = reducible(out, api);
  ReduceOp op(opts.reduceOp, out.scalar_type(), comm_->get(), api);
  // The inputs are copied into one flat tensor on the stream, so they are read when the
  // collective runs, as in the other operations.
  at::Tensor flat = at::empty({size_ * out.numel()}, out.options());
  std::vector<at::Tensor> keep = inputs[0];
  keep.push_back(flat);
  auto* base = static_cast<char*>(flat.data_ptr());
  return launch({c10d::OpType::REDUCE_SCATTER, "trnccl:reduce_scatter", outputs, keep},
                [&](trncclComm_t comm, trnrtStream_t stream) {
                  if (ob.count == 0) return;
                  for (int r = 0; r < size_; ++r) {
                    copyOnStream(base + r * ob.bytes, inputs[0][r].data_ptr(), ob.bytes);
                  }
                  check(
                      trncclReduceScatter(base, ob.data, ob.count, ob.type, op.get(), comm, stream),
                      comm, "reduce_scatter: trncclReduceScatter");
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  const char* api = "reduce_scatter_tensor";
  checkDense(output, api, "output");
  checkSized(input, output, size_ * output.numel(), api, "input");
  Buffer ob = reducible(output, api);
  ReduceOp op(opts.reduceOp, output.scalar_type(), comm_->get(), api);
  void* in = input.data_ptr();
  return launch(
      {c10d::OpType::_REDUCE_SCATTER_BASE, "trnccl:reduce_scatter_tensor", {output}, {input}},
      [&](trncclComm_t comm, trnrtStream_t stream) {
        if (ob.count == 0) return;
        check(trncclReduceScatter(in, ob.data, ob.count, ob.type, op.get(), comm, stream), comm,
              "reduce_scatter_tensor: trncclReduceScatter");
      });
}

}  // namespace torch_trnccl
