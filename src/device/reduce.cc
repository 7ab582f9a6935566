// Reduction kernels of the emulated NeuronCore: one switch on (type, op) per call, then a plain
// indexed loop per combination that GCC -O3 vectorises. dst may alias a or b exactly; element i
// is read before it is written, so the loops stay correct (and GCC's runtime overlap check lets
// the equal-pointer case take the vector path).
#include "device/reduce.h"

#include <cstring>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "device/float_formats.h"

namespace trnccl::device {
namespace {

// How elements are loaded into and stored from the type the arithmetic runs in.
template <typename T>
struct Native {
  using Storage = T;
  using Compute = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};

// fp16/bf16/fp8 compute in float and round to nearest even on every store.
template <typename Format, typename S>
struct Narrow {
  using Storage = S;
  using Compute = float;
  static float load(S v) { return Format::decode(v); }
  static S store(float f) { return S(Format::encode(f)); }
};

// Integer sum/prod wrap modulo 2^bits. Computing in an unsigned type at least as wide as int
// keeps both the promotion of narrow types and the overflow itself defined.
template <typename T>
using Wrap = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct Sum {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return T(Wrap<T>(a) + Wrap<T>(b));
    } else {
      return a + b;
    }
  }
};

struct Prod {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return T(Wrap<T>(a) * Wrap<T>(b));
    } else {
      return a * b;
    }
  }
};

// A NaN in either operand is the result (a != a is false for integers and folds away). Between
// -0 and +0, which compare equal, the second operand wins.
struct Max {
  template <typename T>
  T operator()(T a, T b) const {
    return (a > b || a != a) ? a : b;
  }
};

struct Min {
  template <typename T>
  T operator()(T a, T b) const {
    return (a < b || a != a) ? a : b;
  }
};

template <typename Codec, typename Op>
void applyOp(void* dstv, const void* av, const void* bv, size_t count) {
  using S = typename Codec::Storage;
  S* dst = static_cast<S*>(dstv);
  const S* a = static_cast<const S*>(av);
  const S* b = static_cast<const S*>(bv);
  const Op op;
  for (size_t i = 0; i < count; ++i) {
    dst[i] = Codec::store(op(Codec::load(a[i]), Codec::load(b[i])));
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same loop compiled for AVX2 (8 floats per op, blends, variable shifts, unsigned min/max),
// chosen at run time: the library is built for baseline x86-64, where SSE2 lacks most of these.
// No FMA: a*b+c never appears, and results must not depend on the host.
template <typename Codec, typename Op>
__attribute__((target("avx2"))) void applyOpAvx2(void* dstv, const void* av, const void* bv,
                                                 size_t count) {
  using S = typename Codec::Storage;
  S* dst = static_cast<S*>(dstv);
  const S* a = static_cast<const S*>(av);
  const S* b = static_cast<const S*>(bv);
  const Op op;
  for (size_t i = 0; i < count; ++i) {
    dst[i] = Codec::store(op(Codec::load(a[i]), Codec::load(b[i])));
  }
}

bool hostHasAvx2() {
  static const bool kHasAvx2 = __builtin_cpu_supports("avx2");
  return kHasAvx2;
}

bool hostHasF16c() {
  // CPUID rather than __builtin_cpu_supports("f16c"): clang 14 rejects that feature name, and
  // the fuzz and sanitizer builds use clang.
  static const bool kHasF16c = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) != 0 &&
           (c & bit_F16C) != 0;
  }();
  return kHasF16c;
}

// Vector forms of the ops for the F16C half kernel, with the same NaN rule as Max/Min.
__attribute__((target("avx2"))) inline __m256 vectorOp(RedOp op, __m256 x, __m256 y) {
  switch (op) {
    case RedOp::kProd:
      return _mm256_mul_ps(x, y);
    case RedOp::kMax:
      return _mm256_blendv_ps(
          y, x, _mm256_or_ps(_mm256_cmp_ps(x, y, _CMP_GT_OQ), _mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
    case RedOp::kMin:
      return _mm256_blendv_ps(
          y, x, _mm256_or_ps(_mm256_cmp_ps(x, y, _CMP_LT_OQ), _mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
    default:
      return _mm256_add_ps(x, y);
  }
}

// fp16 with the hardware converters: vcvtps2ph in round-to-nearest-even mode matches
// formats::Half::encode bit for bit (overflow -> inf, subnormals, NaN quieted with the top
// payload bits kept), so results do not depend on which path ran. The tail uses the scalar codec.
template <typename Op>
__attribute__((target("avx2,f16c"))) void halfOpF16c(RedOp op, void* dstv, const void* av,
                                                     const void* bv, size_t count) {
  uint16_t* dst = static_cast<uint16_t*>(dstv);
  const uint16_t* a = static_cast<const uint16_t*>(av);
  const uint16_t* b = static_cast<const uint16_t*>(bv);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    const __m128i r = _mm256_cvtps_ph(vectorOp(op, x, y), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), r);
  }
  applyOp<Narrow<formats::Half, uint16_t>, Op>(dst + i, a + i, b + i, count - i);
}

template <typename Codec, typename Op>
void runOp(void* dst, const void* a, const void* b, size_t count) {
  if constexpr (std::is_same_v<Codec, Narrow<formats::Half, uint16_t>>) {
    if (hostHasF16c()) {
      constexpr RedOp kOp = std::is_same_v<Op, Prod>  ? RedOp::kProd
                            : std::is_same_v<Op, Max> ? RedOp::kMax
                            : std::is_same_v<Op, Min> ? RedOp::kMin
                                                      : RedOp::kSum;
      return halfOpF16c<Op>(kOp, dst, a, b, count);
    }
  }
  if (hostHasAvx2()) {
    applyOpAvx2<Codec, Op>(dst, a, b, count);
  } else {
    applyOp<Codec, Op>(dst, a, b, count);
  }
}
#else
template <typename Codec, typename Op>
void runOp(void* dst, const void* a, const void* b, size_t count) {
  applyOp<Codec, Op>(dst, a, b, count);
}
#endif

template <typename Codec>
void reduceAs(RedOp op, void* dst, const void* a, const void* b, size_t count) {
  switch (op) {
    case RedOp::kSum:
    case RedOp::kAvg:  // the division by the rank count is a separate divide() pass
      return runOp<Codec, Sum>(dst, a, b, count);
    case RedOp::kProd:
      return runOp<Codec, Prod>(dst, a, b, count);
    case RedOp::kMax:
      return runOp<Codec, Max>(dst, a, b, count);
    case RedOp::kMin:
      return runOp<Codec, Min>(dst, a, b, count);
  }
}

template <typename Codec>
void divideAs(void* dstv, const void* av, size_t count, int divisor) {
  using S = typename Codec::Storage;
  using C = typename Codec::Compute;
  S* dst = static_cast<S*>(dstv);
  const S* a = static_cast<const S*>(av);
  if constexpr (std::is_integral_v<C>) {
    // Divide in 64 bits: the divisor may not fit the element type (int8 over 200 ranks), and
    // C++ division truncates toward zero, as NCCL's integer average does.
    using Wide = std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>;
    const Wide d = Wide(divisor);
    for (size_t i = 0; i < count; ++i) dst[i] = S(Wide(a[i]) / d);
  } else {
    const C d = C(divisor);
    for (size_t i = 0; i < count; ++i) dst[i] = Codec::store(Codec::load(a[i]) / d);
  }
}

// dst[i] = src[i] * scalar, in the reduction's precision (Prod: integers wrap).
template <typename Codec>
void scaleAs(void* dstv, const void* srcv, size_t count, const void* scalarv) {
  using S = typename Codec::Storage;
  S* dst = static_cast<S*>(dstv);
  const S* src = static_cast<const S*>(srcv);
  S scalarBits;
  std::memcpy(&scalarBits, scalarv, sizeof(S));
  const auto factor = Codec::load(scalarBits);
  const Prod prod;
  for (size_t i = 0; i < count; ++i) dst[i] = Codec::store(prod(Codec::load(src[i]), factor));
}

// Calls fn.template operator()<Codec>() with the codec of `type`; false for an unknown type.
template <typename Fn>
bool withCodec(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kInt8:
      fn.template operator()<Native<int8_t>>();
      return true;
    case DataType::kUint8:
      fn.template operator()<Native<uint8_t>>();
      return true;
    case DataType::kInt32:
      fn.template operator()<Native<int32_t>>();
      return true;
    case DataType::kUint32:
      fn.template operator()<Native<uint32_t>>();
      return true;
    case DataType::kInt64:
      fn.template operator()<Native<int64_t>>();
      return true;
    case DataType::kUint64:
      fn.template operator()<Native<uint64_t>>();
      return true;
    case DataType::kFloat16:
      fn.template operator()<Narrow<formats::Half, uint16_t>>();
      return true;
    case DataType::kFloat32:
      fn.template operator()<Native<float>>();
      return true;
    case DataType::kFloat64:
      fn.template operator()<Native<double>>();
      return true;
    case DataType::kBfloat16:
      fn.template operator()<Narrow<formats::Bfloat16, uint16_t>>();
      return true;
    case DataType::kFloat8e4m3:
      fn.template operator()<Narrow<formats::Fp8e4m3, uint8_t>>();
      return true;
    case DataType::kFloat8e5m2:
      fn.template operator()<Narrow<formats::Fp8e5m2, uint8_t>>();
      return true;
  }
  return false;
}

}  // namespace

const char* dataTypeName(DataType type) {
  static constexpr const char* kNames[kNumDataTypes] = {"int8",   "uint8",    "int32",  "uint32",
                                                        "int64",  "uint64",   "half",   "float",
                                                        "double", "bfloat16", "f8e4m3", "f8e5m2"};
  const int i = static_cast<int>(type);
  return i >= 0 && i < kNumDataTypes ? kNames[i] : "unknown";
}

const char* redOpName(RedOp op) {
  static constexpr const char* kNames[kNumRedOps] = {"sum", "prod", "max", "min", "avg"};
  const int i = static_cast<int>(op);
  return i >= 0 && i < kNumRedOps ? kNames[i] : "unknown";
}

void reduce(DataType type, RedOp op, void* dst, const void* a, const void* b, size_t count) {
  withCodec(type, [&]<typename Codec>() { reduceAs<Codec>(op, dst, a, b, count); });
}

void divide(DataType type, void* dst, const void* a, size_t count, int divisor) {
  if (divisor == 1) {  // exact for every type, and keeps NaN payloads bit for bit
    copy(dst, a, count * dataTypeSize(type));
    return;
  }
  withCodec(type, [&]<typename Codec>() { divideAs<Codec>(dst, a, count, divisor); });
}

void scale(DataType type, void* dst, const void* src, size_t count, const void* scalar) {
  withCodec(type, [&]<typename Codec>() { scaleAs<Codec>(dst, src, count, scalar); });
}

void copy(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
}

}  // namespace trnccl::device
