// How a torch tensor is handed to trnccl: checks (dense, contiguous, CPU, matching) and the
// element type and count of the C API. A check that fails throws a RuntimeError naming the
// collective and the tensor; nothing is ever issued for a tensor that failed one.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <string>
#include <vector>

#include "trnccl/trnccl.h"

namespace torch_trnccl {

// A tensor as the C API sees it.
struct Buffer {
  void* data = nullptr;
  size_t count = 0;  // elements of `type`
  trncclDataType_t type = trncclUint8;
  size_t bytes = 0;
};

// For reductions: float32/64, float16, bfloat16, int8, uint8, int32, int64, bool (as uint8; the
// op is mapped by reduceOp) and complex (as pairs of its real type). Others throw.
Buffer reducible(const at::Tensor& t, const char* api);
// For collectives that only move data: any dtype; types without a trnccl counterpart (int16,
// ...) move as bytes.
Buffer movable(const at::Tensor& t);

// Throws unless t is a dense, contiguous CPU tensor. `what` names it in the message.
void checkDense(const at::Tensor& t, const char* api, const std::string& what);
// The single tensor of a list (one device per process), checked dense.
const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* api);
// Throws unless `list` has `n` dense tensors of like's dtype and element count.
void checkLike(const std::vector<at::Tensor>& list, size_t n, const at::Tensor& like,
               const char* api, const char* what);
// Throws unless t has like's dtype and `count` elements.
void checkSized(const at::Tensor& t, const at::Tensor& like, int64_t count, const char* api,
                const char* what);

}  // namespace torch_trnccl
