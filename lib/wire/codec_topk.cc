// topk: the k elements of largest magnitude (Stich et al., NeurIPS 2018;
// Lin et al., ICLR 2018). Layout: u32 index[k] ascending, f32 value[k].

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
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
  // The k-th largest magnitude t by nth_element on plain floats, then one
  // pass in index order keeping every |x| > t and the first of those equal
  // to t: the same k elements as ranking (magnitude, lower index) would
  // pick, already in ascending order, at a few times the speed of ranking
  // indices through a comparator (it is on a step's critical path).
  std::vector<float> magnitude(n);
  for (size_t i = 0; i < n; ++i)
    magnitude[i] = Magnitude(x[i]);
  float threshold = -1.0f;  // below every magnitude: k == n keeps all
  size_t ties = 0;
  if (k < n) {
    std::vector<float> order(magnitude);
    std::nth_element(order.begin(), order.begin() + (k - 1), order.end(),
                     std::greater<float>());
    threshold = order[k - 1];
    size_t above = 0;
    for (float m : magnitude)
      above += m > threshold;
    ties = k - above;
  }
  uint8_t* values = out + 4 * k;
  size_t j = 0;
  for (size_t i = 0; i < n && j < k; ++i) {
    const float m = magnitude[i];
    if (m > threshold || (m == threshold && ties > 0)) {
      if (m == threshold)
        --ties;
      StoreU32(out + 4 * j, static_cast<uint32_t>(i));
      StoreF32(values + 4 * j, x[i]);
      ++j;
    }
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
