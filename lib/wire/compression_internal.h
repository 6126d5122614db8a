#pragma once
// Internal to lib/wire: the per-codec halves of wire/compression.h, one file
// each (codec_dense.cc, codec_int8.cc, codec_topk.cc, codec_onebit.cc), and
// the little-endian loads and stores they share. compression.cc checks
// lengths and dispatches; the functions here assume it did. Other layers
// include compression.h, never this file.

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/status.h"
#include "wire/float16.h"
#include "wire/tensor_desc.h"

namespace pstrain::wire::internal {

// Little-endian loads and stores, byte by byte. Inline (frame.h's
// EncodeFixed32 is out of line) because they run once per element in the
// decode loops, where the compiler turns them into single moves.
inline void StoreU16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void StoreU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint16_t LoadU16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
inline uint32_t LoadU32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) |
         (uint32_t{p[3]} << 24);
}
inline void StoreF32(uint8_t* p, float v) {
  StoreU32(p, FloatBits(v));
}
inline float LoadF32(const uint8_t* p) {
  return FloatFromBits(LoadU32(p));
}

/// ceil(n / chunk): the scales of an int8 or onebit record. chunk >= 1.
inline size_t ChunkCount(size_t n, uint32_t chunk) {
  return n / chunk + (n % chunk != 0 ? 1 : 0);
}

/// "nan", "inf", "-inf", or the value as %g: for error messages.
std::string FloatText(float v);
/// kCorruption "<codec>: <what>".
Status CodecError(Codec codec, const std::string& what);
/// The check shared by int8 and onebit: every scale[0..chunks) is finite
/// and >= 0.
Status CheckScales(Codec codec, const uint8_t* scales, size_t chunks);

// raw, fp16, bf16 (codec_dense.cc): one fixed-size code per element.
void EncodeDense(Codec codec, const float* x, size_t n, uint8_t* out);
void DecodeAddDense(Codec codec, const uint8_t* in, size_t n, float alpha,
                    float* acc);
Status ValidateDense(Codec codec, const uint8_t* in, size_t n);
// fp16, bf16: the 2n bytes at buf's front to n float32s in buf[0..4n).
void DecodeDenseInPlace(Codec codec, uint8_t* buf, size_t n);

// int8 (codec_int8.cc).
void EncodeInt8(const float* x, size_t n, uint32_t chunk, uint64_t seed,
                uint8_t* out);
void DecodeAddInt8(const uint8_t* in, size_t n, uint32_t chunk, float alpha,
                   float* acc);
Status ValidateInt8(const uint8_t* in, size_t n, uint32_t chunk);
/// u_i of compression.h: element i's uniform draw in [0, 1) for `seed`.
float StochasticDraw(uint64_t seed, uint64_t i);

// topk (codec_topk.cc); k = TopKCount(ratio, n).
void EncodeTopK(const float* x, size_t n, size_t k, uint8_t* out);
void DecodeAddTopK(const uint8_t* in, size_t k, float alpha, float* acc);
Status ValidateTopK(const uint8_t* in, size_t n, size_t k);

// onebit (codec_onebit.cc).
void EncodeOneBit(const float* x, size_t n, uint32_t chunk, uint8_t* out);
void DecodeAddOneBit(const uint8_t* in, size_t n, uint32_t chunk, float alpha,
                     float* acc);
Status ValidateOneBit(const uint8_t* in, size_t n, uint32_t chunk);

}  // namespace pstrain::wire::internal
