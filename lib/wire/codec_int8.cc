// int8: QSGD stochastic rounding (Alistarh et al., NIPS 2017, section 3)
// with 127 levels a side and one max-|x| scale per chunk.
// Layout: f32 scale[C], i8 q[n].

#include <algorithm>
#include <cmath>
#include <string>

#include "wire/compression.h"
#include "wire/compression_internal.h"

namespace pstrain::wire::internal {
namespace {

constexpr float kLevels = 127.0f;

// max |x|; NaN if any element is NaN, so that the record is refused rather
// than quietly dropping the NaN (std::max would keep whichever came first).
float MaxAbs(const float* x, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (a > m || std::isnan(a))
      m = a;
    if (std::isnan(m))
      break;
  }
  return m;
}

// One chunk's q[0..n) for x[0..n), elements first..first+n of the tensor.
void QuantizeChunk(const float* x, size_t n, float scale, uint64_t seed,
                   size_t first, uint8_t* q) {
  // A zero scale means all zeros; a non-finite one (a NaN or Inf gradient)
  // makes the record invalid anyway, and converting a NaN to int would be
  // undefined.
  if (!(scale > 0 && std::isfinite(scale))) {
    std::fill(q, q + n, uint8_t{0});
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    // |x| <= scale, so |x / scale| <= 1 exactly and |y| <= 127.
    const float y = x[i] / scale * kLevels;
    const float down = std::floor(y);
    const bool up = StochasticDraw(seed, first + i) < y - down;
    const float level =
        std::clamp(down + (up ? 1.0f : 0.0f), -kLevels, kLevels);
    q[i] = static_cast<uint8_t>(static_cast<int8_t>(level));
  }
}

}  // namespace

float StochasticDraw(uint64_t seed, uint64_t i) {
  // Output i of splitmix64 seeded with `seed`, computed directly: any
  // chunk can be encoded on its own, in any order, with the same bytes.
  const uint64_t r = SplitMix64(seed + (i + 1) * kSplitMixGamma);
  return static_cast<float>(r >> 40) * 0x1p-24f;  // 24 bits: exact in float
}

void EncodeInt8(const float* x, size_t n, uint32_t chunk, uint64_t seed,
                uint8_t* out) {
  const size_t chunks = ChunkCount(n, chunk);
  uint8_t* q = out + 4 * chunks;
  for (size_t c = 0; c < chunks; ++c) {
    const size_t first = c * chunk;
    const size_t len = std::min<size_t>(chunk, n - first);
    const float scale = MaxAbs(x + first, len);
    StoreF32(out + 4 * c, scale);
    QuantizeChunk(x + first, len, scale, seed, first, q + first);
  }
}

void DecodeAddInt8(const uint8_t* in, size_t n, uint32_t chunk, float alpha,
                   float* acc) {
  const size_t chunks = ChunkCount(n, chunk);
  const uint8_t* q = in + 4 * chunks;
  for (size_t c = 0; c < chunks; ++c) {
    const size_t first = c * chunk;
    const size_t last = std::min<size_t>(first + chunk, n);
    // One multiply per element: alpha and the step fold into one factor.
    const float step = alpha * (LoadF32(in + 4 * c) / kLevels);
    for (size_t i = first; i < last; ++i)
      acc[i] += static_cast<float>(static_cast<int8_t>(q[i])) * step;
  }
}

Status ValidateInt8(const uint8_t* in, size_t n, uint32_t chunk) {
  const size_t chunks = ChunkCount(n, chunk);
  PS_RETURN_IF_ERROR(CheckScales(Codec::kInt8, in, chunks));
  const uint8_t* q = in + 4 * chunks;
  for (size_t i = 0; i < n; ++i) {
    // -128 decodes fine, but Encode never sends it: one set of bytes per
    // tensor, and |q| <= 127 keeps every decode within its scale.
    if (q[i] == 0x80) {
      return CodecError(Codec::kInt8, "value -128 at " + std::to_string(i) +
                                          " is out of range, expected "
                                          "-127..127");
    }
  }
  return Status::Ok();
}

}  // namespace pstrain::wire::internal
