#include "wire/error_feedback.h"

#include <algorithm>
#include <utility>

#include "util/check.h"

namespace pstrain::wire {

ErrorFeedback::ErrorFeedback(std::vector<size_t> sizes, bool enabled)
    : sizes_(std::move(sizes)), enabled_(enabled) {
  // Allocated here, not on first use, so that Compress never changes the
  // vector of residuals and calls on different keys can run at once.
  if (enabled_) {
    residuals_.reserve(sizes_.size());
    for (size_t n : sizes_)
      residuals_.emplace_back(n, 0.0f);
  }
}

size_t ErrorFeedback::Compress(uint32_t key, Codec codec,
                               const CodecParams& params, const float* grad,
                               size_t n, uint64_t seed, uint8_t* out) {
  PS_CHECK(key < sizes_.size()) << "key " << key << " of " << sizes_.size();
  PS_CHECK(n == sizes_[key]) << "key " << key << ": " << n << " elements, "
                             << sizes_[key] << " registered";
  if (!enabled_)
    return Encode(codec, params, grad, n, seed, out);
  // The residual's storage turns into v, then into v - decoded: no other
  // buffer. Subtracting through DecodeAdd (alpha -1) uses the receiver's
  // own decoding, so the residual is exactly what the receiver misses.
  std::vector<float>& r = residuals_[key];
  for (size_t i = 0; i < n; ++i)
    r[i] += grad[i];
  const size_t bytes = Encode(codec, params, r.data(), n, seed, out);
  DecodeAdd(codec, params, out, bytes, n, -1.0f, r.data());
  return bytes;
}

const std::vector<float>& ErrorFeedback::residual(uint32_t key) const {
  PS_CHECK(key < sizes_.size()) << "key " << key << " of " << sizes_.size();
  static const std::vector<float> kNone;
  return enabled_ ? residuals_[key] : kNone;
}

void ErrorFeedback::Reset() {
  for (std::vector<float>& r : residuals_)
    std::fill(r.begin(), r.end(), 0.0f);
}

}  // namespace pstrain::wire
