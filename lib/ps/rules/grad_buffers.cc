#include "ps/rules/grad_buffers.h"

#include <ATen/ATen.h>

namespace pstrain::ps {

GradBuffers::GradBuffers(const ParameterServer& store)
    : buffers_(store.num_workers()) {
  for (auto& buffers : buffers_) {
    for (int k = 0; k < store.num_keys(); ++k) {
      buffers.push_back(store.is_row_sparse(k)
                            ? at::Tensor()
                            : at::zeros_like(store.params()[k]));
    }
  }
}

void GradBuffers::DecodeRecord(int w, int key, wire::Codec codec,
                               const wire::CodecParams& params,
                               const uint8_t* data, uint64_t nbytes) {
  const at::Tensor& g = buffers_[w][key];
  g.zero_();
  wire::DecodeAdd(codec, params, data, nbytes, static_cast<size_t>(g.numel()),
                  1.0f, g.data_ptr<float>());
}

}  // namespace pstrain::ps
