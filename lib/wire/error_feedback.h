#pragma once
// ErrorFeedback: the worker's memory of what compression dropped, one
// float32 residual per tensor (Karimireddy et al., "Error Feedback Fixes
// SignSGD and other Gradient Compression Schemes", ICML 2019, Algorithm 2
// EF-SGD; Stich et al., "Sparsified SGD with Memory", NeurIPS 2018,
// Algorithm 1). Each step sends C(g + e) and keeps e = (g + e) - C(g + e),
// so nothing a lossy codec drops is lost, only delayed: the pushes of K
// steps add up to the gradients of K steps minus the last residual.
// No torch: float arrays in, bytes out (wire/compression.h codes them).
//
// Thread-safety: Compress calls on different keys may run at once (each
// touches only its own key's residual, allocated up front); calls on one
// key must not overlap. The residuals are owned here.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "wire/compression.h"
#include "wire/tensor_desc.h"

namespace pstrain::wire {

class ErrorFeedback {
 public:
  /// Keys 0..sizes.size()-1, key k a tensor of sizes[k] elements. A tensor
  /// sent in slices needs one key per slice. With `enabled` false nothing
  /// is carried between steps and no residual memory is allocated.
  ErrorFeedback(std::vector<size_t> sizes, bool enabled);

  ErrorFeedback(const ErrorFeedback&) = delete;
  ErrorFeedback& operator=(const ErrorFeedback&) = delete;

  /// Encodes v = grad + residual(key) as Encode(codec, params, v, n, seed,
  /// out) does, and sets residual(key) = v - decoded, where decoded is
  /// exactly what DecodeAdd on the receiver adds (it is computed by
  /// DecodeAdd). Disabled: encodes grad, keeps nothing. Returns the bytes
  /// written, CompressedBytes(codec, params, n). grad: float32 [n]. A NaN
  /// or Inf in grad makes the record one Validate refuses, and the
  /// residual non-finite. REQUIRES: key < size(), n == sizes[key],
  /// CheckCodecParams(codec, params) ok, out as for Encode.
  size_t Compress(uint32_t key, Codec codec, const CodecParams& params,
                  const float* grad, size_t n, uint64_t seed, uint8_t* out);

  /// The residual of `key`: float32 [sizes[key]], zeros before the first
  /// Compress; empty when disabled. Valid until this object is destroyed.
  /// REQUIRES: key < size().
  const std::vector<float>& residual(uint32_t key) const;

  /// Drops every residual back to zero (for example when the pushes they
  /// complement were lost with a server).
  void Reset();

  bool enabled() const { return enabled_; }
  /// The number of keys.
  size_t size() const { return sizes_.size(); }

 private:
  std::vector<size_t> sizes_;
  bool enabled_;
  std::vector<std::vector<float>> residuals_;  // empty when !enabled_
};

}  // namespace pstrain::wire
