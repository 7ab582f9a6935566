// Data movement: broadcast, all-gather (list, flat, coalesced), gather, scatter.
#include <string>

#include "errors.h"
#include "group.h"
#include "process_group.h"
#include "tensors.h"

namespace torch_trnccl {
namespace {

std::vector<at::Tensor> flatten(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<at::Tensor> all;
  for (const auto& list : lists) all.insert(all.end(), list.begin(), list.end());
  return all;
}

// The receive list of a rooted collective: `size` tensors like `like` on the root, none (an
// empty outer list or one empty list, as torch passes them) elsewhere.
void checkRootList(const std::vector<std::vector<at::Tensor>>& lists, bool isRoot, int size,
                   const at::Tensor& like, const char* api, const char* what) {
  if (!isRoot) {
    if (lists.size() > 1 || (lists.size() == 1 && !lists[0].empty())) {
      fail(std::string(api) + ": " + what + " must be empty on ranks other than the root");
    }
    return;
  }
  if (lists.size() != 1) fail(std::string(api) + ": expected one " + what + " on the root");
  checkLike(lists[0], size, like, api, what);
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  const char* api = "broadcast";
  const at::Tensor& t = single(tensors, api);
  checkRoot(opts.rootRank, api);
  if (opts.rootTensor != 0) fail("broadcast: rootTensor must be 0 (one tensor per process)");
  Buffer b = movable(t);
  const int root = static_cast<int>(opts.rootRank);
  return launch({c10d::OpType::BROADCAST, "trnccl:broadcast", tensors, {}},
                [&](trncclComm_t comm, trnrtStream_t stream) {
                  if (b.count == 0) return;
                  check(trncclBroadcast(b.data, b.data, b.count, b.type, root, comm, stream), comm,
                        "broadcast: trncclBroadcast");
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  const char* api = "all_gather";
  const at::Tensor& in = single(inputs, api);
  if (outputs.size() != 1) fail("all_gather: expected one output list");
  checkLike(outputs[0], size_, in, api, "tensor_list");
  Buffer b = movable(in);
  // Gathered into one flat tensor, then copied out on the stream.
  at::Tensor flat = at::empty({static_cast<int64_t>(size_ * b.bytes)}, at::kByte);
  auto* base = static_cast<char*>(flat.data_ptr());
  return launch({c10d::OpType::ALLGATHER, "trnccl:all_gather", outputs[0], {in, flat}},
                [&](trncclComm_t comm, trnrtStream_t stream) {
                  if (b.count == 0) return;
                  check(trncclAllGather(b.data, base, b.count, b.type, comm, stream), comm,
                        "all_gather: trncclAllGather");
                  for (int r = 0; r < size_; ++r) {
                    copyOnStream(outputs[0][r].data_ptr(), base + r * b.bytes, b.bytes);
                  }
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& /*opts*/) {
  const char* api = "all_gather_into_tensor";
  checkDense(input, api, "input");
  checkSized(output, input, size_ * input.numel(), api, "output");
  Buffer b = movable(input);
  void* out = output.data_ptr();
  return launch({c10d::OpType::_ALLGATHER_BASE, "trnccl:all_gather_into_tensor", {output}, {input}},
                [&](trncclComm_t comm, trnrtStream_t stream) {
                  if (b.count == 0) return;
                  check(trncclAllGather(b.data, out, b.count, b.type, comm, stream), comm,
                        "all_gather_into_tensor: trncclAllGather");
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  const char* api = "all_gather_coalesced";
  if (outputLists.size() != static_cast<size_t>(size_)) {
    fail("all_gather_coalesced: expected " + std::to_string(size_) + " output lists, got " +
         std::to_string(outputLists.size()));
  }
  std::vector<Buffer> buffers;
  std::vector<at::Tensor> keep;
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkDense(inputs[i], api, "input_tensor_list[" + std::to_string(i) + "]");
    buffers.push_back(movable(inputs[i]));
    keep.push_back(inputs[i]);
    keep.push_back(at::empty({static_cast<int64_t>(size_ * buffers[i].bytes)}, at::kByte));
  }
  for (int r = 0; r < size_; ++r) {
    if (outputLists[r].size() != inputs.size()) {
      fail("all_gather_coalesced: output list " + std::to_string(r) + " has " +
           std::to_string(outputLists[r].size()) + " tensors, expected " +
           std::to_string(inputs.size()));
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      checkSized(outputLists[r][i], inputs[i], inputs[i].numel(), api, "output tensor");
    }
  }
  return launch({c10d::OpType::ALLGATHER_COALESCED, "trnccl:all_gather_coalesced",
                 flatten(outputLists), keep},
                [&](trncclComm_t comm, trnrtStream_t stream) {
                  inGroup(comm, [&] {
                    for (size_t i = 0; i < buffers.size(); ++i) {
                      if (buffers[i].count == 0) continue;
                      check(trncclAllGather(buffers[i].data, keep[2 * i + 1].data_ptr(),
                                            buffers[i].count, buffers[i].type, comm, stream),
                            comm, "all_gather_coalesced: trncclAllGather");
                    }
                  });
                  for (size_t i = 0; i < buffers.size(); ++i) {
                    auto* base = static_cast<char*>(keep[2 * i + 1].data_ptr());
                    for (int r = 0; r < size_; ++r) {
                      copyOnStream(outputLists[r][i].data_ptr(), base + r * buffers[i].bytes,
                                   buffers[i].bytes);
                    }
                  }
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const char* api = "gather";
  const at::Tensor& in = single(inputs, api);
  checkRoot(opts.rootRank, api);
  const int root = static_cast<int>(opts.rootRank);
  const bool isRoot = rank_ == root;
  checkRootList(outputs, isRoot, size_, in, api, "gather_list");
  Buffer b = movable(in);
  std::vector<at::Tensor> received = isRoot ? outputs[0] : std::vector<at::Tensor>{};
  return launch({c10d::OpType::GATHER, "trnccl:gather", received, {in}}, [&](trncclComm_t comm,
                                                                             trnrtStream_t stream) {
    if (b.count == 0) return;
    if (!isRoot) {
      check(trncclSend(b.data, b.count, b.type, root, comm, stream), comm, "gather: trncclSend");
      return;
    }
    copyOnStream(received[root].data_ptr(), b.data, b.bytes);
    inGroup(comm, [&] {
      for (int r = 0; r < size_; ++r) {
        if (r == root) continue;
        check(trncclRecv(received[r].data_ptr(), b.count, b.type, r, comm, stream), comm,
              "gather: trncclRecv");
      }
    });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const char* api = "scatter";
  const at::Tensor& out = single(outputs, api);
  checkRoot(opts.rootRank, api);
  const int root = static_cast<int>(opts.rootRank);
  const bool isRoot = rank_ == root;
  checkRootList(inputs, isRoot, size_, out, api, "scatter_list");
  Buffer b = movable(out);
  std::vector<at::Tensor> sent = isRoot ? inputs[0] : std::vector<at::Tensor>{};
  return launch({c10d::OpType::SCATTER, "trnccl:scatter", outputs, sent},
                [&](trncclComm_t comm, trnrtStream_t stream) {
                  if (b.count == 0) return;
                  if (!isRoot) {
                    check(trncclRecv(b.data, b.count, b.type, root, comm, stream), comm,
                          "scatter: trncclRecv");
                    return;
                  }
                  copyOnStream(b.data, sent[root].data_ptr(), b.bytes);
                  inGroup(comm, [&] {
                    for (int r = 0; r < size_; ++r) {
                      if (r == root) continue;
                      check(trncclSend(sent[r].data_ptr(), b.count, b.type, r, comm, stream), comm,
                            "scatter: trncclSend");
                    }
                  });
                });
}

}  // namespace torch_trnccl
