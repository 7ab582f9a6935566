// Element types and the reduction kernels of the emulated NeuronCore.
//
// Buffers are type-erased (void* + DataType); the switch on the element type happens once per
// call, inside the kernel, and the loops are plain enough for the compiler to vectorise.
// fp16, bf16 and fp8 are reduced in float and rounded to nearest even on every call, so a
// reduction over n ranks rounds n-1 times, the same on every rank.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trnccl::device {

// Values match trncclDataType_t and trncclRedOp_t.
enum class DataType : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kFloat8e4m3 = 10,
  kFloat8e5m2 = 11,
};
constexpr int kNumDataTypes = 12;

enum class RedOp : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4 };
constexpr int kNumRedOps = 5;

// Bytes per element; 0 for a value outside the enumeration. Inline: every step of every call
// asks (a call into the library was ~25 instructions each, issue 14).
inline constexpr size_t dataTypeSize(DataType type) {
  constexpr unsigned char kSizes[kNumDataTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  const auto i = static_cast<unsigned>(type);
  return i < static_cast<unsigned>(kNumDataTypes) ? kSizes[i] : 0;
}
const char* dataTypeName(DataType type);  // nccl-tests names: int8 ... half float bfloat16 f8e4m3
const char* redOpName(RedOp op);          // sum prod max min avg

// dst[i] = a[i] (op) b[i] for i < count; dst may alias a or b. kAvg reduces as kSum.
// Integer sum and prod wrap around modulo 2^bits. Floating max/min return NaN when either
// operand is NaN (unlike std::fmax); between -0 and +0, which compare equal, b is returned.
// With two NaN operands, which one's sign and payload survive is unspecified (the compiler may
// swap the operands of a commutative operation).
// An unknown type or op does nothing (the API layer validates them).
void reduce(DataType type, RedOp op, void* dst, const void* a, const void* b, size_t count);

// dst[i] = a[i] / divisor: the final step of kAvg. Integers divide truncating toward zero;
// floating types divide in their reduction precision and round to nearest even.
// divisor >= 1; divisor == 1 copies the bits unchanged.
void divide(DataType type, void* dst, const void* a, size_t count, int divisor);

// dst[i] = src[i] * (*scalar) for i < count, the scalar an element of `type` (it may be
// unaligned): the pre-multiplication of trncclRedOpCreatePreMulSum. Computed as kProd would
// (fp16/bf16/fp8 in float, rounded to nearest even; integers wrap). dst may alias src.
void scale(DataType type, void* dst, const void* src, size_t count, const void* scalar);

// memmove of `bytes` bytes (no-op when dst == src): the copy kernel of the emulated core.
void copy(void* dst, const void* src, size_t bytes);

// Scalar conversions, exact where representable and round-to-nearest-even otherwise.
// fp8 e4m3 (OCP): no infinities, NaN is S.1111.111, max 448; out-of-range values saturate to
// +-448 (infinity too), NaN stays NaN. fp8 e5m2 is IEEE-like: overflow rounds to infinity.
// In detail (decoding is exact for every bit pattern, subnormals included):
//  - half (binary16, bias 15): overflow (|x| >= 65520) -> +-inf; float NaN -> quiet NaN with
//    the sign and the top 9 payload bits kept; decoded NaNs keep their payload.
//  - bf16 (bias 127): decode is a 16-bit shift; encode rounds the low 16 bits (overflow ->
//    inf); a NaN is truncated with the quiet bit forced, so rounding never turns it into inf.
//  - fp8 e4m3 (bias 7, min subnormal 2^-9): |x| rounding above 448, and +-inf, give +-448;
//    NaN -> 0x7F, or 0xFF for a negative NaN (the sign is kept).
//  - fp8 e5m2 (bias 15, inf S.11111.00, max 57344): |x| >= 61440 -> +-inf; NaN -> quiet NaN
//    S.11111.1x with the sign (and the float's top payload bit) kept.
// The conversions assume the default round-to-nearest-even floating-point environment.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bfloat16ToFloat(uint16_t b);
uint16_t floatToBfloat16(float f);
float fp8e4m3ToFloat(uint8_t v);
uint8_t floatToFp8e4m3(float f);
float fp8e5m2ToFloat(uint8_t v);
uint8_t floatToFp8e5m2(float f);

}  // namespace trnccl::device
