#include "worker/slice_compressors.h"

namespace pstrain::worker {

void SliceCompressors::Plan(const ps::CompressionSpec& spec,
                            const ps::ShardPlan& plan, size_t keys) {
  spec_ = spec;
  compressors_.resize(plan.num_servers);
  slices_of_key_.assign(keys, {});
  for (int s = 0; s < plan.num_servers; ++s) {
    const auto& mine = plan.by_server[s];
    for (size_t j = 0; j < mine.size(); ++j)
      slices_of_key_[plan.slices[mine[j]].key].push_back(
          {s, static_cast<int>(j)});
  }
}

void SliceCompressors::Make(int s, std::vector<at::Tensor> grads,
                            const std::vector<bool>& trained,
                            const std::vector<bool>& sparse, uint64_t seed) {
  compressors_[s] =
      PushCompressor::ForSlices(spec_, std::move(grads), trained, sparse, seed);
}

void SliceCompressors::Prepare(int model_key) {
  for (const auto& [s, j] : slices_of_key_[model_key]) {
    if (compressors_[s])
      compressors_[s]->Compress(j);
  }
}

}  // namespace pstrain::worker
