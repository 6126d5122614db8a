// The row-sparse keys of the Engine's pushes and replies (DESIGN.md,
// "Sparse rows"; share/doc/wire-format.md): a push's rows and row requests
// are checked against this server's tables before any byte is read, the
// rows land in ParameterServer::RowsBuffer and are handed to the update
// rule once finite, and the reply to a push_pull carries the rows it asked
// for instead of those tables.

#include <algorithm>

#include <ATen/ATen.h>

#include "ps/engine.h"
#include "ps/engine_peer.h"
#include "ps/finite_check.h"
#include "ps/tensor_codec.h"

namespace pstrain::ps {

std::string Engine::KeyName(int key) const {
  return key >= 0 && key < static_cast<int>(fingerprint_.size())
             ? fingerprint_[key].name
             : "?";
}

// Each row-sparse key once (among the dense keys too: key_seen_ is
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
    if (key_seen_[d.key])
      return Corruption(record + ") names a key an earlier tensor was");
    key_seen_[d.key] = true;
    const at::Tensor& table = params[d.key];
    if (d.dtype != DescribeTensor(d.key, table).dtype ||
        d.dims[1] != table.size(1) || d.codec != wire::Codec::kRaw) {
      return Corruption(record + ", " + KeyName(d.key) + ") is " +
                        wire::DTypeName(d.dtype) + " rows of " +
                        std::to_string(d.dims[1]) + ", expected " +
                        wire::DTypeName(DescribeTensor(d.key, table).dtype) +
                        " rows of " + std::to_string(table.size(1)));
    }
    PS_RETURN_IF_ERROR(
        CheckRowIds(rows[i].ids, d.key, record + ", " + KeyName(d.key) + ")"));
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
    PS_RETURN_IF_ERROR(
        CheckRowIds(requests[i].ids, key, record + ", " + KeyName(key) + ")"));
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

// A key's rows are read whole into RowsBuffer; a key with no rows in this
// push has no piece, and is handed to the rule at once.
void Engine::PlanRows(Peer& peer, const std::vector<wire::SparseRows>& rows,
                      ReadPlan* plan) {
  for (const auto& r : rows) {
    const int k = static_cast<int>(r.rows.key);
    const at::Tensor& buffer = server_->RowsBuffer(peer.worker, k, r.ids);
    if (r.rows.nbytes == 0) {
      rule_->AddRows(peer.worker, k);
      continue;
    }
    char* data = static_cast<char*>(buffer.data_ptr());
    peer.pieces.push_back({k, 0, r.rows.nbytes, data});
    plan->buffers.push_back({data, r.rows.nbytes});
  }
}

void Engine::AddRowsPiece(Peer& peer, size_t index) {
  const Peer::Piece& piece = peer.pieces[index];
  if (!AllFinite(piece.rows, piece.bytes,
                 server_->params()[piece.key].scalar_type())) {
    peer.refused_key = piece.key;
    return;
  }
  rule_->AddRows(peer.worker, piece.key);
}

// The dense keys as SendParams sends them, then the rows asked for,
// gathered once every key of this version is stepped.
void Engine::SendRows(Peer& peer, uint64_t id) {
  server_->StepAllKeys();
  const auto& params = server_->params();
  wire::Params& m = peer.reply;
  m.version = server_->version();
  m.stop = stop_training_;
  m.members = params_msg_.members;
  m.params.clear();
  m.rows.resize(peer.want.size());
  peer.reply_rows.resize(peer.want.size());
  std::vector<bool> asked(params.size(), false);
  for (const auto& q : peer.want)
    asked[q.key] = true;
  out_.data.clear();
  for (size_t k = 0; k < params.size(); ++k) {
    if (asked[k])
      continue;
    m.params.push_back(params_msg_.params[k]);
    const auto [data, nbytes] = ParamBytes(static_cast<int>(k));
    out_.data.push_back({data, nbytes, static_cast<uint32_t>(k) + 1});
  }
  for (size_t i = 0; i < peer.want.size(); ++i) {
    const wire::RowRequest& q = peer.want[i];
    const at::Tensor ids = at::tensor(q.ids, at::kLong);
    peer.reply_rows[i] = params[q.key].detach().index_select(0, ids);
    m.rows[i].rows = DescribeTensor(q.key, peer.reply_rows[i]);
    m.rows[i].ids = q.ids;
    out_.data.push_back(
        {peer.reply_rows[i].data_ptr(), peer.reply_rows[i].nbytes(), 0});
  }
  wire::EncodeMeta(m, &peer.meta);
  out_.type = wire::MsgType::kParams;
  out_.request_id = id;
  out_.meta = peer.meta;
  out_.gate = &step_gate_;
  fence_.Sent(peer.id);
  outbox_->Send(peer.id, out_);
}

}  // namespace pstrain::ps
