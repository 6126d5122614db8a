// The row-sparse keys of the Engine's replies (share/doc/design.md, "Sparse
// rows"; share/doc/wire-format.md): the reply to a push_pull carries the
// rows it asked for instead of those tables (a push's rows are read by the
// PushReader, ps/engine/push_reader.h). Rows travel in the codecs of
// ps::PullRowsCodecOf (raw, fp16 or bf16).

#include <algorithm>

#include <ATen/ATen.h>

#include "ps/engine/engine.h"
#include "ps/engine/peer.h"
#include "ps/job/tensor_codec.h"
#include "util/check.h"
#include "wire/compression.h"

namespace pstrain::ps {

namespace {

// The rows `ids` of `table` (float32 [rows, row_dim], contiguous) coded
// in `codec` into out, one row after another: a per-element codec codes
// each row as it would the whole gathered tensor, without gathering it.
void EncodeRows(wire::Codec codec, const at::Tensor& table,
                const std::vector<int64_t>& ids, uint8_t* out) {
  PS_CHECK(table.is_contiguous() && table.scalar_type() == at::kFloat)
      << "rows of a table that is not contiguous float32";
  const size_t dim = static_cast<size_t>(table.size(1));
  const size_t row_bytes = wire::CompressedBytes(codec, {}, dim);
  const float* base = table.data_ptr<float>();
  for (size_t j = 0; j < ids.size(); ++j) {
    wire::Encode(codec, {}, base + static_cast<size_t>(ids[j]) * dim, dim, 0,
                 out + j * row_bytes);
  }
}

}  // namespace

void Engine::SendRows(WorkerPeer& peer, uint64_t id) {
  rule_->StepAllKeys();
  const auto& params = server_->params();
  wire::Params& m = peer.rows_out.msg;
  m.version = server_->version();
  m.stop = stop_training_;
  m.members = formats_.params_msg.members;
  m.params.clear();
  m.rows.resize(peer.rows_out.want.size());
  peer.rows_out.rows.resize(peer.rows_out.want.size());
  std::vector<bool> asked(params.size(), false);
  for (const auto& q : peer.rows_out.want)
    asked[q.key] = true;
  out_.data.clear();
  for (size_t k = 0; k < params.size(); ++k) {
    if (asked[k])
      continue;
    m.params.push_back(formats_.params_by_key[k]);
    const auto [data, nbytes] =
        ParamBytes(static_cast<int>(k), peer.worker, server_->version());
    out_.data.push_back(
        {data, nbytes, rule_->step_order().Mark(static_cast<int>(k))});
  }
  peer.rows_out.records.resize(peer.rows_out.want.size());
  for (size_t i = 0; i < peer.rows_out.want.size(); ++i) {
    const wire::RowRequest& q = peer.rows_out.want[i];
    const at::Tensor table = params[q.key].detach();
    const wire::Codec codec = PullRowsCodecOf(formats_.compression, table);
    m.rows[i].ids = q.ids;
    if (codec == wire::Codec::kRaw) {
      peer.rows_out.rows[i] =
          table.index_select(0, at::tensor(q.ids, at::kLong));
      m.rows[i].rows = DescribeTensor(q.key, peer.rows_out.rows[i]);
      out_.data.push_back({peer.rows_out.rows[i].data_ptr(),
                           peer.rows_out.rows[i].nbytes(), 0});
      continue;
    }
    wire::TensorDesc& d = m.rows[i].rows;
    d = DescribeTensor(q.key, table);
    d.dims[0] = static_cast<int64_t>(q.ids.size());
    d.codec = codec;
    d.nbytes = wire::CompressedBytes(codec, formats_.compression.params,
                                     static_cast<size_t>(d.numel()));
    std::vector<uint8_t>& record = peer.rows_out.records[i];
    record.resize(d.nbytes);  // grows to the largest request, then reused
    EncodeRows(codec, table, q.ids, record.data());
    out_.data.push_back({record.data(), d.nbytes, 0});
  }
  wire::EncodeMeta(m, &peer.meta);
  SendParamsFrame(peer, id, false);
}

}  // namespace pstrain::ps
