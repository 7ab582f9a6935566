// Out-of-line scalar conversions declared in reduce.h; the codecs live in float_formats.h so the
// reduction loops can inline them.
#include "device/float_formats.h"

#include "device/reduce.h"

namespace trnccl::device {

float halfToFloat(uint16_t h) { return formats::Half::decode(h); }
uint16_t floatToHalf(float f) { return uint16_t(formats::Half::encode(f)); }
float bfloat16ToFloat(uint16_t b) { return formats::Bfloat16::decode(b); }
uint16_t floatToBfloat16(float f) { return uint16_t(formats::Bfloat16::encode(f)); }
float fp8e4m3ToFloat(uint8_t v) { return formats::Fp8e4m3::decode(v); }
uint8_t floatToFp8e4m3(float f) { return uint8_t(formats::Fp8e4m3::encode(f)); }
float fp8e5m2ToFloat(uint8_t v) { return formats::Fp8e5m2::decode(v); }
uint8_t floatToFp8e5m2(float f) { return uint8_t(formats::Fp8e5m2::encode(f)); }

}  // namespace trnccl::device
