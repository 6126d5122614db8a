// raw, fp16 and bf16: one fixed-size little-endian code per element.

#include <cmath>
#include <string>

#include "wire/compression_internal.h"

namespace pstrain::wire::internal {
namespace {

// A finite float beyond the 16-bit format's range rounds to infinity, which
// Validate refuses: send the largest finite code of its sign instead, and
// let error feedback carry the rest. Infinity and NaN stay what they are.
uint16_t Saturate(float x, uint16_t code, uint16_t max_bits) {
  const bool inf = (code & 0x7FFFu) == ((max_bits + 1u) & 0x7FFFu);
  if (inf && std::isfinite(x))
    return static_cast<uint16_t>((code & 0x8000u) | max_bits);
  return code;
}

uint16_t ToHalf(float x) {
  return Saturate(x, FloatToHalf(x), kHalfMaxBits);
}

uint16_t ToBFloat16(float x) {
  return Saturate(x, FloatToBFloat16(x), kBFloat16MaxBits);
}

float CodeValue(Codec codec, uint16_t code) {
  return codec == Codec::kFp16 ? HalfToFloat(code) : BFloat16ToFloat(code);
}

}  // namespace

void EncodeDense(Codec codec, const float* x, size_t n, uint8_t* out) {
  if (codec == Codec::kRaw) {
    for (size_t i = 0; i < n; ++i)
      StoreF32(out + 4 * i, x[i]);
  } else if (codec == Codec::kFp16) {
    for (size_t i = 0; i < n; ++i)
      StoreU16(out + 2 * i, ToHalf(x[i]));
  } else {
    for (size_t i = 0; i < n; ++i)
      StoreU16(out + 2 * i, ToBFloat16(x[i]));
  }
}

// One loop per codec, so that each inner loop has no branch on the codec.
void DecodeAddDense(Codec codec, const uint8_t* in, size_t n, float alpha,
                    float* acc) {
  if (codec == Codec::kRaw) {
    for (size_t i = 0; i < n; ++i)
      acc[i] += alpha * LoadF32(in + 4 * i);
  } else if (codec == Codec::kFp16) {
    for (size_t i = 0; i < n; ++i)
      acc[i] += alpha * HalfToFloat(LoadU16(in + 2 * i));
  } else {
    for (size_t i = 0; i < n; ++i)
      acc[i] += alpha * BFloat16ToFloat(LoadU16(in + 2 * i));
  }
}

// Back to front: element i's bytes [4i, 4i + 4) hold codes 2i and 2i + 1,
// both at or past i, so read already (code i just now).
void DecodeDenseInPlace(Codec codec, uint8_t* buf, size_t n) {
  for (size_t i = n; i-- > 0;)
    StoreF32(buf + 4 * i, CodeValue(codec, LoadU16(buf + 2 * i)));
}

Status ValidateDense(Codec codec, const uint8_t* in, size_t n) {
  if (codec == Codec::kRaw)  // length only, as raw data always was
    return Status::Ok();
  for (size_t i = 0; i < n; ++i) {
    const uint16_t code = LoadU16(in + 2 * i);
    // Both formats: all exponent bits set is Inf or NaN.
    const uint16_t exp_mask = codec == Codec::kFp16 ? 0x7C00 : 0x7F80;
    if ((code & exp_mask) == exp_mask) {
      return CodecError(codec, "value at " + std::to_string(i) + " is " +
                                   FloatText(CodeValue(codec, code)) +
                                   ", expected a finite value");
    }
  }
  return Status::Ok();
}

}  // namespace pstrain::wire::internal
