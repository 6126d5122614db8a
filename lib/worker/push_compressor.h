#pragma once
// PushCompressor: a worker's gradients for one server coded as the job's
// --compression says, one record per attached key, each made as
// soon as backward has made its gradient final (GradStream's prepare), so
// that it leaves while the rest of backward runs, as raw gradients do.
// int8, topk and onebit carry what they leave out to the key's next
// gradient (wire/error_feedback.h) unless --error_feedback off. Keys of the
// raw codec (buffers, small tensors) are sent from the tensors themselves.
// Compress calls on different keys may run at once; not on one key.

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/job/compression_spec.h"
#include "wire/error_feedback.h"

namespace pstrain::worker {

class PushCompressor {
 public:
  /// `grads`: the attached gradients (contiguous CPU, key order), which
  /// must outlive this object; `codecs`: by key (ps::PushCodecOf). `seed`
  /// makes int8's stochastic rounding differ between workers and servers
  /// (derive it from the job's seed, the rank and the server). Each record
  /// starts as that of a zero gradient, so a push before any backward is
  /// valid.
  PushCompressor(const ps::CompressionSpec& c, std::vector<at::Tensor> grads,
                 std::vector<wire::Codec> codecs, uint64_t seed);
  /// The compressor of one server's slices: each slice's codec by the
  /// server's own rule (ps::PushCodecOf) from its gradient and whether it
  /// is trained (`trained`, by slice); a row-sparse slice (`sparse`) is
  /// raw, as its rows are coded by SparseSlot. nullptr when every slice is
  /// raw.
  static std::unique_ptr<PushCompressor> ForSlices(
      const ps::CompressionSpec& c, std::vector<at::Tensor> grads,
      const std::vector<bool>& trained, const std::vector<bool>& sparse,
      uint64_t seed);

  wire::Codec codec(int key) const { return codecs_[key]; }
  bool compressed(int key) const { return codecs_[key] != wire::Codec::kRaw; }
  /// The record of `key` as of its last Compress. REQUIRES: compressed(key).
  const std::vector<uint8_t>& record(int key) const { return records_[key]; }
  /// Codes key's gradient now; a no-op for a raw key.
  void Compress(int key);
  /// What error feedback holds back of `key` (empty when it is off or the
  /// key's codec is not lossy).
  const std::vector<float>& residual(int key) const {
    return feedback_.residual(static_cast<uint32_t>(key));
  }

 private:
  wire::CodecParams params_;
  std::vector<at::Tensor> grads_;
  std::vector<wire::Codec> codecs_;
  std::vector<std::vector<uint8_t>> records_;
  std::vector<uint64_t> steps_;  // Compress calls so far, by key
  uint64_t seed_;
  wire::ErrorFeedback feedback_;
};

}  // namespace pstrain::worker
