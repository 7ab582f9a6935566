#include "tensors.h"

#include <c10/util/Exception.h>

#include <optional>

#include "errors.h"

namespace torch_trnccl {
namespace {

std::optional<trncclDataType_t> nativeType(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return trncclFloat32;
    case at::kDouble:
      return trncclFloat64;
    case at::kHalf:
      return trncclFloat16;
    case at::kBFloat16:
      return trncclBfloat16;
    case at::kChar:
      return trncclInt8;
    case at::kByte:
      return trncclUint8;
    case at::kBool:
      return trncclUint8;
    case at::kInt:
      return trncclInt32;
    case at::kLong:
      return trncclInt64;
    default:
      return std::nullopt;
  }
}

std::string sizes(const at::Tensor& t) {
  return c10::str(t.sizes()) + " " + std::string(c10::toString(t.scalar_type()));
}

}  // namespace

Buffer reducible(const at::Tensor& t, const char* api) {
  at::ScalarType type = t.scalar_type();
  if (at::isComplexType(type)) {
    at::ScalarType real = c10::toRealValueType(type);
    return Buffer{t.data_ptr(), static_cast<size_t>(t.numel()) * 2, *nativeType(real), t.nbytes()};
  }
  std::optional<trncclDataType_t> native = nativeType(type);
  if (!native) {
    fail(std::string(api) + ": dtype " + c10::toString(type) +
         " cannot be reduced (trnccl reduces float32, float64, float16, bfloat16, int8, uint8, "
         "int32, int64, bool and complex)");
  }
  return Buffer{t.data_ptr(), static_cast<size_t>(t.numel()), *native, t.nbytes()};
}

Buffer movable(const at::Tensor& t) {
  std::optional<trncclDataType_t> native = nativeType(t.scalar_type());
  if (native && !at::isComplexType(t.scalar_type())) {
    return Buffer{t.data_ptr(), static_cast<size_t>(t.numel()), *native, t.nbytes()};
  }
  return Buffer{t.data_ptr(), t.nbytes(), trncclUint8, t.nbytes()};
}

void checkDense(const at::Tensor& t, const char* api, const std::string& what) {
  if (!t.defined()) fail(std::string(api) + ": " + what + " is an undefined tensor");
  if (!t.device().is_cpu()) {
    fail(std::string(api) + ": " + what + " is on " + t.device().str() +
         "; trnccl's torch backend takes CPU tensors");
  }
  if (t.layout() != at::kStrided) fail(std::string(api) + ": " + what + " is not a dense tensor");
  if (!t.is_contiguous()) {
    fail(std::string(api) + ": " + what + " " + sizes(t) +
         " is not contiguous; call .contiguous() first");
  }
}

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* api) {
  if (tensors.size() != 1) {
    fail(std::string(api) + ": expected exactly one tensor (one device per process), got " +
         std::to_string(tensors.size()));
  }
  checkDense(tensors[0], api, "the tensor");
  return tensors[0];
}

void checkSized(const at::Tensor& t, const at::Tensor& like, int64_t count, const char* api,
                const char* what) {
  checkDense(t, api, what);
  if (t.scalar_type() != like.scalar_type() || t.numel() != count) {
    fail(std::string(api) + ": " + what + " is " + sizes(t) + ", expected " +
         std::to_string(count) + " elements of " + c10::toString(like.scalar_type()));
  }
}

void checkLike(const std::vector<at::Tensor>& list, size_t n, const at::Tensor& like,
               const char* api, const char* what) {
  if (list.size() != n) {
    fail(std::string(api) + ": " + what + " has " + std::to_string(list.size()) +
         " tensors, expected " + std::to_string(n));
  }
  for (size_t i = 0; i < n; ++i) {
    checkSized(list[i], like, like.numel(), api,
               (std::string(what) + "[" + std::to_string(i) + "]").c_str());
  }
}

}  // namespace torch_trnccl
