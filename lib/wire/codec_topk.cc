// topk: the k elements of largest magnitude (Stich et al., NeurIPS 2018;
// Lin et al., ICLR 2018). Layout: u32 index[k] ascending, f32 value[k].

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "wire/compression_internal.h"

namespace pstrain::wire::internal {
namespace {

// |x| as a sort key with NaN as the largest, so the order stays a strict
// weak order (std::nth_element's requirement) and a NaN gradient is sent,
// to be refused, rather than silently dropped.
float Magnitude(float x) {
  const float a = std::fabs(x);
  return std::isnan(a) ? std::numeric_limits<float>::infinity() : a;
}

std::string At(size_t pos) {
  return " at " + std::to_string(pos);
}

}  // namespace

void EncodeTopK(const float* x, size_t n, size_t k, uint8_t* out) {
  std::vector<uint32_t> index(n);
  std::iota(index.begin(), index.end(), 0u);
  // Larger first; equal magnitudes by lower index, so the choice does not
  // depend on the library's nth_element.
  auto before = [x](uint32_t a, uint32_t b) {
    const float ma = Magnitude(x[a]);
    const float mb = Magnitude(x[b]);
    return ma > mb || (ma == mb && a < b);
  };
  if (k < n)
    std::nth_element(index.begin(), index.begin() + k, index.end(), before);
  std::sort(index.begin(), index.begin() + k);  // only the k kept
  uint8_t* values = out + 4 * k;
  for (size_t j = 0; j < k; ++j) {
    StoreU32(out + 4 * j, index[j]);
    StoreF32(values + 4 * j, x[index[j]]);
  }
}

void DecodeAddTopK(const uint8_t* in, size_t k, float alpha, float* acc) {
  const uint8_t* values = in + 4 * k;
  for (size_t j = 0; j < k; ++j)
    acc[LoadU32(in + 4 * j)] += alpha * LoadF32(values + 4 * j);
}

Status ValidateTopK(const uint8_t* in, size_t n, size_t k) {
  // Each case its own message: an index past n would write outside the
  // accumulator; a repeated one would add one element twice; ascending
  // order is what makes repeats cheap to find and the bytes canonical.
  for (size_t j = 0; j < k; ++j) {
    const uint32_t index = LoadU32(in + 4 * j);
    const std::string what = "index " + std::to_string(index) + At(j);
    if (index >= n) {
      return CodecError(Codec::kTopK, what +
                                          " is out of range: the tensor has " +
                                          std::to_string(n) + " elements");
    }
    const uint32_t prev = j > 0 ? LoadU32(in + 4 * (j - 1)) : 0;
    if (j > 0 && index == prev) {
      return CodecError(Codec::kTopK,
                        what + " is repeated: the index before it is the same");
    }
    if (j > 0 && index < prev) {
      return CodecError(Codec::kTopK, what + " is out of order: below " +
                                          std::to_string(prev) +
                                          " before it (indices must ascend)");
    }
  }
  const uint8_t* values = in + 4 * k;
  for (size_t j = 0; j < k; ++j) {
    const float v = LoadF32(values + 4 * j);
    if (!std::isfinite(v)) {
      return CodecError(Codec::kTopK, "value" + At(j) + " is " + FloatText(v) +
                                          ", expected a finite value");
    }
  }
  return Status::Ok();
}

}  // namespace pstrain::wire::internal
