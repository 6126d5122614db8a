// onebit: scaled sign, ||x||_1 / d * sign(x) per chunk (Karimireddy et al.,
// ICML 2019, section 3). Layout: f32 scale[C], u8 sign_bits[ceil(n / 8)],
// element i in bit i % 8 (LSB first) of byte i / 8, set for x < 0.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "wire/compression_internal.h"

namespace pstrain::wire::internal {
namespace {

// mean |x| of a chunk, summed in double so that a chunk of thousands of
// elements loses no more than float's last bit. NaN or Inf if any x is.
float MeanAbs(const float* x, size_t n) {
  double sum = 0;
  for (size_t i = 0; i < n; ++i)
    sum += std::fabs(static_cast<double>(x[i]));
  return static_cast<float>(sum / static_cast<double>(n));
}

bool SignBit(const uint8_t* bits, size_t i) {
  return (bits[i / 8] >> (i % 8)) & 1u;
}

}  // namespace

void EncodeOneBit(const float* x, size_t n, uint32_t chunk, uint8_t* out) {
  const size_t chunks = ChunkCount(n, chunk);
  for (size_t c = 0; c < chunks; ++c) {
    const size_t first = c * chunk;
    StoreF32(out + 4 * c,
             MeanAbs(x + first, std::min<size_t>(chunk, n - first)));
  }
  uint8_t* bits = out + 4 * chunks;
  std::fill(bits, bits + (n + 7) / 8, uint8_t{0});  // padding bits stay 0
  for (size_t i = 0; i < n; ++i) {
    if (x[i] < 0)
      bits[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
  }
}

void DecodeAddOneBit(const uint8_t* in, size_t n, uint32_t chunk, float alpha,
                     float* acc) {
  const size_t chunks = ChunkCount(n, chunk);
  const uint8_t* bits = in + 4 * chunks;
  for (size_t c = 0; c < chunks; ++c) {
    const size_t first = c * chunk;
    const size_t last = std::min<size_t>(first + chunk, n);
    const float up = alpha * LoadF32(in + 4 * c);  // alpha * +scale
    for (size_t i = first; i < last; ++i)
      acc[i] += SignBit(bits, i) ? -up : up;
  }
}

Status ValidateOneBit(const uint8_t* in, size_t n, uint32_t chunk) {
  const size_t chunks = ChunkCount(n, chunk);
  PS_RETURN_IF_ERROR(CheckScales(Codec::kOneBit, in, chunks));
  // Bits past n decode to nothing, but Encode leaves them 0: refusing
  // others keeps one set of bytes per tensor.
  if (n % 8 != 0) {
    const uint8_t last = in[4 * chunks + n / 8];
    const auto padding = static_cast<uint8_t>(last & (0xFFu << (n % 8)));
    if (padding != 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", padding);
      return CodecError(Codec::kOneBit, std::string("padding bits ") + hex +
                                            " of the last byte are set, "
                                            "expected 0");
    }
  }
  return Status::Ok();
}

}  // namespace pstrain::wire::internal
