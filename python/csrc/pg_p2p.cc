// All-to-all (equal and unequal splits, tensor lists) and point-to-point.
//
// trncclAlltoAll moves equal blocks. Unequal splits and lists are one trnccl group of a send
// and a receive per peer (skipping empty ones, which both sides agree on when the splits do)
// plus a stream copy of the rank's own block. send and recv are deferred and issued together
// (issuer.h). Tags are not matched: messages between two ranks arrive in the order they were
// posted, as with NCCL.
#include <algorithm>
#include <string>

#include "errors.h"
#include "group.h"
#include "process_group.h"
#include "tensors.h"

namespace torch_trnccl {
namespace {

// Rows (dim-0 slices) per rank: the given splits, or equal ones when none were given.
std::vector<int64_t> splitsOf(const std::vector<int64_t>& given, const at::Tensor& t, int size,
                              const char* what) {
  if (t.dim() == 0) fail(std::string("all_to_all: ") + what + " is a 0-dim tensor");
  const int64_t rows = t.size(0);
  if (given.empty()) {
    if (rows % size != 0) {
      fail(std::string("all_to_all: ") + what + " has " + std::to_string(rows) +
           " rows, not divisible by the group size " + std::to_string(size));
    }
    return std::vector<int64_t>(size, rows / size);
  }
  int64_t total = 0;
  for (int64_t s : given) {
    if (s < 0) fail(std::string("all_to_all: negative split size in ") + what);
    total += s;
  }
  if (given.size() != static_cast<size_t>(size) || total != rows) {
    fail(std::string("all_to_all: ") + what + " splits have " + std::to_string(given.size()) +
         " entries summing to " + std::to_string(total) + ", expected " + std::to_string(size) +
         " summing to " + std::to_string(rows) + " rows");
  }
  return given;
}

// A block of a tensor: pointer, elements (of the tensor's trnccl type) and bytes.
struct Block {
  void* data;
  size_t count;
  size_t bytes;
};

std::vector<Block> blocksOf(const Buffer& b, const at::Tensor& t,
                            const std::vector<int64_t>& splits) {
  const size_t rows = static_cast<size_t>(t.size(0));
  const size_t perRow = rows == 0 ? 0 : b.count / rows;
  const size_t bytesPerRow = rows == 0 ? 0 : b.bytes / rows;
  std::vector<Block> blocks;
  size_t row = 0;
  for (int64_t s : splits) {
    blocks.push_back(
        Block{static_cast<char*>(b.data) + row * bytesPerRow, s * perRow, s * bytesPerRow});
    row += s;
  }
  return blocks;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& outputSplits,
    std::vector<int64_t>& inputSplits, const c10d::AllToAllOptions& /*opts*/) {
  const char* api = "all_to_all_single";
  checkDense(input, api, "input");
  checkDense(output, api, "output");
  if (output.scalar_type() != input.scalar_type()) fail("all_to_all_single: dtypes differ");
  std::vector<int64_t> inSplits = splitsOf(inputSplits, input, size_, "input");
  std::vector<int64_t> outSplits = splitsOf(outputSplits, output, size_, "output");
  Buffer in = movable(input);
  Buffer out = movable(output);
  std::vector<Block> sends = blocksOf(in, input, inSplits);
  std::vector<Block> recvs = blocksOf(out, output, outSplits);
  const bool equal = in.count == out.count && in.count % size_ == 0 &&
                     std::all_of(sends.begin(), sends.end(),
                                 [&](const Block& s) { return s.count == in.count / size_; }) &&
                     std::all_of(recvs.begin(), recvs.end(),
                                 [&](const Block& r) { return r.count == in.count / size_; });
  if (recvs[rank_].bytes != sends[rank_].bytes) {
    fail("all_to_all_single: this rank sends itself " + std::to_string(sends[rank_].count) +
         " elements but expects " + std::to_string(recvs[rank_].count));
  }
  return launch({c10d::OpType::ALLTOALL_BASE, "trnccl:all_to_all_single", {output}, {input}},
                [&](trncclComm_t comm, trnrtStream_t stream) {
                  if (equal) {
                    if (in.count == 0) return;
                    check(
                        trncclAlltoAll(in.data, out.data, in.count / size_, in.type, comm, stream),
                        comm, "all_to_all_single: trncclAlltoAll");
                    return;
                  }
                  copyOnStream(recvs[rank_].data, sends[rank_].data, sends[rank_].bytes);
                  inGroup(comm, [&] {
                    for (int r = 0; r < size_; ++r) {
                      if (r == rank_) continue;
                      if (sends[r].count > 0) {
                        check(trncclSend(sends[r].data, sends[r].count, in.type, r, comm, stream),
                              comm, "all_to_all_single: trncclSend");
                      }
                      if (recvs[r].count > 0) {
                        check(trncclRecv(recvs[r].data, recvs[r].count, out.type, r, comm, stream),
                              comm, "all_to_all_single: trncclRecv");
                      }
                    }
                  });
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions& /*opts*/) {
  const char* api = "all_to_all";
  if (inputs.size() != static_cast<size_t>(size_) || outputs.size() != inputs.size()) {
    fail("all_to_all: expected " + std::to_string(size_) + " input and output tensors, got " +
         std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  }
  std::vector<Buffer> ins, outs;
  for (int r = 0; r < size_; ++r) {
    checkDense(inputs[r], api, "input_tensor_list[" + std::to_string(r) + "]");
    checkDense(outputs[r], api, "output_tensor_list[" + std::to_string(r) + "]");
    if (inputs[r].scalar_type() != inputs[0].scalar_type() ||
        outputs[r].scalar_type() != inputs[0].scalar_type()) {
      fail("all_to_all: every input and output tensor must have the same dtype");
    }
    ins.push_back(movable(inputs[r]));
    outs.push_back(movable(outputs[r]));
  }
  if (ins[rank_].bytes != outs[rank_].bytes) {
    fail("all_to_all: this rank's own input and output tensors differ in size");
  }
  return launch({c10d::OpType::ALLTOALL, "trnccl:all_to_all", outputs, inputs},
                [&](trncclComm_t comm, trnrtStream_t stream) {
                  copyOnStream(outs[rank_].data, ins[rank_].data, ins[rank_].bytes);
                  inGroup(comm, [&] {
                    for (int r = 0; r < size_; ++r) {
                      if (r == rank_) continue;
                      if (ins[r].count > 0) {
                        check(trncclSend(ins[r].data, ins[r].count, ins[r].type, r, comm, stream),
                              comm, "all_to_all: trncclSend");
                      }
                      if (outs[r].count > 0) {
                        check(
                            trncclRecv(outs[r].data, outs[r].count, outs[r].type, r, comm, stream),
                            comm, "all_to_all: trncclRecv");
                      }
                    }
                  });
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::deferP2p(bool send,
                                                            std::vector<at::Tensor>& tensors,
                                                            int peer) {
  const char* api = send ? "send" : "recv";
  const at::Tensor& t = single(tensors, api);
  checkPeer(peer, api);
  c10::intrusive_ptr<Work> work = makeWork({send ? c10d::OpType::SEND : c10d::OpType::RECV,
                                            send ? "trnccl:send" : "trnccl:recv",
                                            tensors,
                                            {}});
  work->setIssuer(issuer_);
  issuer_->defer({send, movable(t), peer, work});
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::send(std::vector<at::Tensor>& tensors,
                                                        int dstRank, int /*tag*/) {
  return deferP2p(true, tensors, dstRank);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTrnccl::recv(std::vector<at::Tensor>& tensors,
                                                        int srcRank, int /*tag*/) {
  return deferP2p(false, tensors, srcRank);
}

}  // namespace torch_trnccl
