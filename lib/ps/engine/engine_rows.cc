// The row-sparse keys of the Engine's pushes and replies
// (share/doc/design.md, "Sparse rows"; share/doc/wire-format.md): a push's rows
// and row requests are checked against this server's tables before any byte is
// read, the rows land in ParameterServer::RowsBuffer and are handed to the
// update rule once finite, and the reply to a push_pull carries the rows it
// asked for instead of those tables. Rows travel in the codecs of
// ps::PushRowsCodecOf and ps::PullRowsCodecOf (raw, fp16 or bf16).

#include <algorithm>

#include <ATen/ATen.h>

#include "ps/engine/engine.h"
#include "ps/engine/finite_check.h"
#include "ps/engine/peer.h"
#include "ps/job/tensor_codec.h"
#include "util/check.h"
#include "wire/compression.h"

namespace pstrain::ps {

namespace {

// " in fp16" for a message; "" for raw, as CheckDescMatches says it.
std::string In(wire::Codec codec) {
  return codec == wire::Codec::kRaw
             ? std::string()
             : std::string(" in ") + wire::CodecName(codec);
}

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

// Each row-sparse key once (among the dense keys too: formats_.seen is
// CheckPushKeys'), as rows of its dtype and row width, ids in its range;
// each request of a row-sparse key, once, ids in its range.
Status Engine::CheckRows(const std::vector<wire::SparseRows>& rows,
                         const std::vector<wire::RowRequest>& requests,
                         const char* what) {
  const auto& params = server_->params();
  for (size_t i = 0; i < rows.size(); ++i) {
    const wire::TensorDesc& d = rows[i].rows;
    const std::string record = std::string(what) + ": rows " +
                               std::to_string(i) + " (key " +
                               std::to_string(d.key);
    if (d.key >= params.size() || !server_->is_row_sparse(d.key)) {
      return Corruption(record + ") is not a row-sparse key of this server");
    }
    if (formats_.seen[d.key])
      return Corruption(record + ") names a key an earlier tensor was");
    formats_.seen[d.key] = true;
    const at::Tensor& table = params[d.key];
    const wire::Codec codec = formats_.push[d.key];
    const wire::DType dtype = DescribeTensor(d.key, table).dtype;
    if (d.dtype != dtype || d.dims[1] != table.size(1) || d.codec != codec) {
      return Corruption(record + ", " + formats_.Name(d.key) + ") is " +
                        wire::DTypeName(d.dtype) + " rows of " +
                        std::to_string(d.dims[1]) + In(d.codec) +
                        ", expected " + wire::DTypeName(dtype) + " rows of " +
                        std::to_string(table.size(1)) + In(codec));
    }
    // A raw descriptor's nbytes the wire checked; a record's size is the
    // job's codec's (wire::CompressedBytes).
    const uint64_t want =
        codec == wire::Codec::kRaw
            ? d.nbytes
            : wire::CompressedBytes(codec, formats_.compression.params,
                                    static_cast<size_t>(d.numel()));
    if (d.nbytes != want) {
      return Corruption(record + ", " + formats_.Name(d.key) + ") has " +
                        std::to_string(d.nbytes) + " bytes of " +
                        wire::CodecName(codec) + ", expected " +
                        std::to_string(want));
    }
    PS_RETURN_IF_ERROR(CheckRowIds(rows[i].ids, d.key,
                                   record + ", " + formats_.Name(d.key) + ")"));
  }
  if (requests.empty())
    return Status::Ok();  // the dense path allocates nothing
  std::vector<bool> asked(params.size(), false);
  for (size_t i = 0; i < requests.size(); ++i) {
    const uint32_t key = requests[i].key;
    const std::string record = std::string(what) + ": request " +
                               std::to_string(i) + " (key " +
                               std::to_string(key);
    if (key >= params.size() || !server_->is_row_sparse(key))
      return Corruption(record + ") is not a row-sparse key of this server");
    if (asked[key])
      return Corruption(record + ") names a key an earlier request did");
    asked[key] = true;
    PS_RETURN_IF_ERROR(CheckRowIds(requests[i].ids, key,
                                   record + ", " + formats_.Name(key) + ")"));
  }
  return Status::Ok();
}

// The wire checked that ids ascend and are unique (wire/messages.h), so
// the first out of range is where the row count would be inserted.
Status Engine::CheckRowIds(const std::vector<int64_t>& ids, uint32_t key,
                           const std::string& record) {
  const int64_t rows = server_->params()[key].size(0);
  const auto it = std::lower_bound(ids.begin(), ids.end(), rows);
  if (it == ids.end())
    return Status::Ok();
  return Corruption(record + ": row id " + std::to_string(*it) + " at " +
                    std::to_string(it - ids.begin()) +
                    " is out of range: the table has " + std::to_string(rows) +
                    " rows");
}

// A key's rows are read whole into RowsBuffer (a record of them, half its
// size, into its front); a key with no rows in this push has no piece, and
// is handed to the rule at once.
void Engine::PlanRows(WorkerPeer& peer,
                      const std::vector<wire::SparseRows>& rows,
                      ReadPlan* plan) {
  for (const auto& r : rows) {
    const int k = static_cast<int>(r.rows.key);
    const at::Tensor& buffer = server_->RowsBuffer(peer.worker, k, r.ids);
    plan->groups.push_back(plan->buffers.size());
    if (r.rows.nbytes == 0) {
      rule_->AddRows(peer.worker, k);
      continue;
    }
    char* data = static_cast<char*>(buffer.data_ptr());
    peer.pieces.push_back({k, 0, r.rows.nbytes, data});
    plan->buffers.push_back({data, r.rows.nbytes});
  }
}

// Raw rows are checked for NaN and Inf; a record is validated (its
// values finite) and decoded where it lies, at the front of RowsBuffer,
// into the float32 rows that the rule reads from there, as raw ones.
void Engine::AddRowsPiece(WorkerPeer& peer, size_t index) {
  const WorkerPeer::Piece& piece = peer.pieces[index];
  const wire::Codec codec = formats_.push[piece.key];
  if (codec == wire::Codec::kRaw) {
    if (!AllFinite(piece.rows, piece.bytes,
                   server_->params()[piece.key].scalar_type())) {
      peer.refused_key = piece.key;
      return;
    }
  } else {
    auto* data = reinterpret_cast<uint8_t*>(piece.rows);
    // Per-element codecs: CheckRows made bytes n codes of this size.
    const size_t n = static_cast<size_t>(
        piece.bytes /
        wire::CompressedBytes(codec, formats_.compression.params, 1));
    Status s = wire::Validate(codec, formats_.compression.params, data,
                              piece.bytes, n);
    if (!s.ok()) {
      peer.refused_key = piece.key;
      peer.refused_why = "rows: " + s.message();
      return;
    }
    wire::DecodeInPlace(codec, data, n);
  }
  rule_->AddRows(peer.worker, piece.key);
}

// The dense keys as SendParams sends them, then the rows asked for,
// gathered once every key of this version is stepped.
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
