#include "ps/engine/key_formats.h"

#include "ps/job/tensor_codec.h"
#include "util/check.h"

namespace pstrain::ps {

KeyFormats::KeyFormats(const JobSpec& spec,
                       std::vector<wire::KeySpec> fingerprint_in,
                       const ParameterServer& server)
    : fingerprint(std::move(fingerprint_in)) {
  auto c = CompressionOf(spec);
  PS_CHECK(c.ok()) << c.status().ToString();
  compression = *c;
  const auto& params = server.params();
  std::vector<bool> row_sparse(params.size());
  for (int k = 0; k < server.num_keys(); ++k)
    row_sparse[k] = server.is_row_sparse(k);
  pull.Init(compression, params, row_sparse);
  for (int k = 0; k < server.num_keys(); ++k) {
    push.push_back(
        row_sparse[k]
            ? PushRowsCodecOf(compression, params[k])
            : PushCodecOf(compression, params[k].requires_grad(), params[k]));
    wire::TensorDesc d = DescribeTensor(k, params[k]);
    if (pull.codec(k) != wire::Codec::kRaw) {
      d.codec = pull.codec(k);
      d.nbytes = pull.nbytes(k);
    }
    params_by_key.push_back(d);
  }
}

std::string KeyFormats::Name(int key) const {
  return key >= 0 && key < static_cast<int>(fingerprint.size())
             ? fingerprint[key].name
             : "?";
}

}  // namespace pstrain::ps
