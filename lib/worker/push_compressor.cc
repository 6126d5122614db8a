#include "worker/push_compressor.h"

#include "util/check.h"

namespace pstrain::worker {

namespace {

// Error feedback's residuals: one per lossy key, none for the rest.
std::vector<size_t> ResidualSizes(const std::vector<at::Tensor>& grads,
                                  const std::vector<wire::Codec>& codecs) {
  std::vector<size_t> sizes(grads.size(), 0);
  for (size_t k = 0; k < grads.size(); ++k) {
    if (ps::IsLossy(codecs[k]))
      sizes[k] = static_cast<size_t>(grads[k].numel());
  }
  return sizes;
}

}  // namespace

std::unique_ptr<PushCompressor> PushCompressor::ForSlices(
    const ps::CompressionSpec& c, std::vector<at::Tensor> grads,
    const std::vector<bool>& trained, const std::vector<bool>& sparse,
    uint64_t seed) {
  if (c.push == wire::Codec::kRaw)
    return nullptr;
  std::vector<wire::Codec> codecs(grads.size(), wire::Codec::kRaw);
  bool any = false;
  for (size_t j = 0; j < grads.size(); ++j) {
    if (!sparse[j])
      codecs[j] = ps::PushCodecOf(c, trained[j], grads[j]);
    any = any || codecs[j] != wire::Codec::kRaw;
  }
  if (!any)
    return nullptr;
  return std::make_unique<PushCompressor>(c, std::move(grads),
                                          std::move(codecs), seed);
}

PushCompressor::PushCompressor(const ps::CompressionSpec& c,
                               std::vector<at::Tensor> grads,
                               std::vector<wire::Codec> codecs, uint64_t seed)
    : params_(c.params),
      grads_(std::move(grads)),
      codecs_(std::move(codecs)),
      records_(grads_.size()),
      steps_(grads_.size(), 0),
      seed_(seed),
      feedback_(ResidualSizes(grads_, codecs_), c.error_feedback) {
  PS_CHECK(codecs_.size() == grads_.size()) << "one codec per key";
  for (size_t k = 0; k < grads_.size(); ++k) {
    if (!compressed(static_cast<int>(k)))
      continue;
    PS_CHECK(grads_[k].scalar_type() == at::kFloat && grads_[k].is_contiguous())
        << "key " << k << " cannot be compressed";
    const size_t n = static_cast<size_t>(grads_[k].numel());
    records_[k].resize(wire::CompressedBytes(codecs_[k], params_, n));
    const std::vector<float> zeros(n, 0.0f);
    wire::Encode(codecs_[k], params_, zeros.data(), n, 0, records_[k].data());
  }
}

void PushCompressor::Compress(int key) {
  if (!compressed(key))
    return;
  const at::Tensor& g = grads_[key];
  const size_t n = static_cast<size_t>(g.numel());
  // Each (seed, key, step) gets draws of its own.
  const uint64_t seed =
      wire::SplitMix64(seed_ ^ wire::SplitMix64(static_cast<uint64_t>(key) *
                                                    wire::kSplitMixGamma +
                                                steps_[key]++));
  const float* x = g.data_ptr<float>();
  uint8_t* out = records_[key].data();
  if (ps::IsLossy(codecs_[key])) {
    feedback_.Compress(static_cast<uint32_t>(key), codecs_[key], params_, x, n,
                       seed, out);
  } else {
    wire::Encode(codecs_[key], params_, x, n, seed, out);
  }
}

}  // namespace pstrain::worker
