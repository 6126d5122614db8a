#include "ps/engine/pull_records.h"

#include <limits>

#include "util/check.h"

namespace pstrain::ps {

void PullRecords::Init(const CompressionSpec& c,
                       const std::vector<at::Tensor>& params,
                       const std::vector<bool>& row_sparse) {
  params_ = c.params;
  codecs_.assign(params.size(), wire::Codec::kRaw);
  records_.assign(params.size(), {});
  versions_.assign(params.size(), std::numeric_limits<uint64_t>::max());
  for (size_t k = 0; k < params.size(); ++k) {
    if (!row_sparse.empty() && row_sparse[k])
      continue;
    codecs_[k] = PullCodecOf(c, params[k].requires_grad(), params[k]);
    if (codecs_[k] != wire::Codec::kRaw) {
      records_[k].resize(wire::CompressedBytes(
          codecs_[k], params_, static_cast<size_t>(params[k].numel())));
    }
  }
}

void PullRecords::Encode(int key, const at::Tensor& param, uint64_t version) {
  if (codecs_[key] == wire::Codec::kRaw)
    return;
  PS_CHECK(param.is_contiguous() && param.scalar_type() == at::kFloat)
      << "pull record of key " << key;
  wire::Encode(codecs_[key], params_, param.data_ptr<float>(),
               static_cast<size_t>(param.numel()), 0, records_[key].data());
  versions_[key] = version;
}

}  // namespace pstrain::ps
