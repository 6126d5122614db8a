#include "ps/engine/push_reader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "ps/engine/finite_check.h"
#include "ps/engine/peer.h"
#include "ps/job/tensor_codec.h"
#include "wire/compression.h"

namespace pstrain::ps {

namespace {

// " in fp16" for a message; "" for raw, as CheckDescMatches says it.
std::string In(wire::Codec codec) {
  return codec == wire::Codec::kRaw
             ? std::string()
             : std::string(" in ") + wire::CodecName(codec);
}

}  // namespace

PushReader::PushReader(ParameterServer* store, UpdateRule* rule,
                       const KeyFormats* formats)
    : store_(store), rule_(rule), formats_(formats) {}

// A push names every key once, in any order: a worker sends its gradients
// in the order backward computes them (net/send_gate.h).
Status PushReader::Check(const std::vector<wire::TensorDesc>& grads,
                         const std::vector<wire::SparseRows>& rows,
                         const std::vector<wire::RowRequest>& requests,
                         const char* what) {
  const auto& params = store_->params();
  seen_.assign(params.size(), false);  // allocates once
  for (size_t i = 0; i < grads.size(); ++i) {
    const uint32_t key = grads[i].key;
    if (key >= params.size() || seen_[key]) {
      return Corruption(
          std::string(what) + ": tensor " + std::to_string(i) + " is key " +
          std::to_string(key) + ", " +
          (key >= params.size()
               ? "expected a key below " + std::to_string(params.size())
               : std::string("which an earlier tensor was")));
    }
    seen_[key] = true;
    if (store_->is_row_sparse(static_cast<int>(key))) {
      return Corruption(std::string(what) + ": tensor " + std::to_string(i) +
                        " is key " + std::to_string(key) + " (" +
                        formats_->Name(static_cast<int>(key)) +
                        "), which is row-sparse: expected its rows");
    }
    const wire::Codec codec = formats_->push[key];
    PS_RETURN_IF_ERROR(
        CheckDescMatches(grads[i], key, params[key], what, codec));
    if (codec == wire::Codec::kRaw)
      continue;
    const uint64_t want =
        wire::CompressedBytes(codec, formats_->compression.params,
                              static_cast<size_t>(params[key].numel()));
    if (grads[i].nbytes != want) {
      return Corruption(std::string(what) + ": tensor " + std::to_string(i) +
                        " (key " + std::to_string(key) + ") has " +
                        std::to_string(grads[i].nbytes) + " bytes of " +
                        wire::CodecName(codec) + ", expected " +
                        std::to_string(want));
    }
  }
  PS_RETURN_IF_ERROR(CheckRows(rows, what));
  return CheckRequests(requests, what);
}

// Each row-sparse key once (among the dense keys too), as rows of its
// dtype and row width, ids in its range.
Status PushReader::CheckRows(const std::vector<wire::SparseRows>& rows,
                             const char* what) {
  const auto& params = store_->params();
  for (size_t i = 0; i < rows.size(); ++i) {
    const wire::TensorDesc& d = rows[i].rows;
    const std::string record = std::string(what) + ": rows " +
                               std::to_string(i) + " (key " +
                               std::to_string(d.key);
    if (d.key >= params.size() || !store_->is_row_sparse(d.key)) {
      return Corruption(record + ") is not a row-sparse key of this server");
    }
    if (seen_[d.key])
      return Corruption(record + ") names a key an earlier tensor was");
    seen_[d.key] = true;
    const at::Tensor& table = params[d.key];
    const wire::Codec codec = formats_->push[d.key];
    const wire::DType dtype = DescribeTensor(d.key, table).dtype;
    const std::string name = formats_->Name(d.key);
    if (d.dtype != dtype || d.dims[1] != table.size(1) || d.codec != codec) {
      return Corruption(record + ", " + name + ") is " +
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
            : wire::CompressedBytes(codec, formats_->compression.params,
                                    static_cast<size_t>(d.numel()));
    if (d.nbytes != want) {
      return Corruption(record + ", " + name + ") has " +
                        std::to_string(d.nbytes) + " bytes of " +
                        wire::CodecName(codec) + ", expected " +
                        std::to_string(want));
    }
    PS_RETURN_IF_ERROR(
        CheckRowIds(rows[i].ids, d.key, record + ", " + name + ")"));
  }
  return Status::Ok();
}

// Each request of a row-sparse key, once, ids in its range.
Status PushReader::CheckRequests(const std::vector<wire::RowRequest>& requests,
                                 const char* what) {
  if (requests.empty())
    return Status::Ok();  // the dense path allocates nothing
  const auto& params = store_->params();
  std::vector<bool> asked(params.size(), false);
  for (size_t i = 0; i < requests.size(); ++i) {
    const uint32_t key = requests[i].key;
    const std::string record = std::string(what) + ": request " +
                               std::to_string(i) + " (key " +
                               std::to_string(key);
    if (key >= params.size() || !store_->is_row_sparse(key))
      return Corruption(record + ") is not a row-sparse key of this server");
    if (asked[key])
      return Corruption(record + ") names a key an earlier request did");
    asked[key] = true;
    PS_RETURN_IF_ERROR(CheckRowIds(requests[i].ids, key,
                                   record + ", " + formats_->Name(key) + ")"));
  }
  return Status::Ok();
}

// The wire checked that ids ascend and are unique (wire/messages.h), so
// the first out of range is where the row count would be inserted.
Status PushReader::CheckRowIds(const std::vector<int64_t>& ids, uint32_t key,
                               const std::string& record) const {
  const int64_t rows = store_->params()[key].size(0);
  const auto it = std::lower_bound(ids.begin(), ids.end(), rows);
  if (it == ids.end())
    return Status::Ok();
  return Corruption(record + ": row id " + std::to_string(*it) + " at " +
                    std::to_string(it - ids.begin()) +
                    " is out of range: the table has " + std::to_string(rows) +
                    " rows");
}

void PushReader::Plan(WorkerPeer& peer,
                      const std::vector<wire::TensorDesc>& grads,
                      const std::vector<wire::SparseRows>& rows,
                      ReadPlan* plan) {
  constexpr uint64_t kPiece = ParameterServer::kPieceBytes;
  peer.refused_key = -1;
  peer.refused_why.clear();
  peer.pieces.clear();
  plan->in_place = rule_->AddsPiecesInPlace();
  const auto& params = store_->params();
  // Sized before any piece points into it: records share the buffer.
  uint64_t largest = 0;
  for (const auto& desc : grads) {
    if (formats_->push[desc.key] != wire::Codec::kRaw)
      largest = std::max(largest, desc.nbytes);
  }
  if (peer.record.size() < largest)
    peer.record.resize(largest);  // once per peer
  for (const auto& desc : grads) {
    const int k = static_cast<int>(desc.key);
    plan->groups.push_back(plan->buffers.size());
    if (formats_->push[k] != wire::Codec::kRaw) {
      PlanRecord(peer, desc, plan);
      continue;
    }
    const uint64_t nbytes = params[k].nbytes();
    for (uint64_t off = 0; off < nbytes; off += kPiece) {
      const uint64_t n = std::min(kPiece, nbytes - off);
      peer.pieces.push_back({k, off, n});
      plan->buffers.push_back({rule_->PieceBuffer(peer.worker, k, off), n});
    }
  }
  // A key's rows are read whole into RowsBuffer (a record of them, half its
  // size, into its front); a key with no rows in this push has no piece.
  for (const auto& r : rows) {
    const int k = static_cast<int>(r.rows.key);
    const at::Tensor& buffer = store_->RowsBuffer(peer.worker, k, r.ids);
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

bool PushReader::ReadsAt(const WorkerPeer& peer, size_t index) const {
  const WorkerPeer::Piece& piece = peer.pieces[index];
  return rule_->AddsPiecesInPlace() && piece.rows == nullptr &&
         formats_->push[piece.key] == wire::Codec::kRaw;
}

int PushReader::ReadAt(WorkerPeer& peer, size_t index, const char* data) {
  return AddRaw(peer, index, data);
}

// Checked for NaN and Inf, and added: from the rule's PieceBuffer, or from
// where it lies in a shared-memory ring. A rule that sums pieces checks
// each element in the pass that adds it (AddPieceAt), so bytes a peer
// shares are read once; one that keeps the gradient has it in its own
// buffer, which no peer can write, and checks it there first.
int PushReader::AddRaw(WorkerPeer& peer, size_t index, const char* data) {
  const WorkerPeer::Piece& piece = peer.pieces[index];
  bool finite;
  if (rule_->AddsPiecesInPlace()) {
    finite = rule_->AddPieceAt(peer.worker, piece.key, piece.offset, data,
                               piece.bytes);
  } else {
    finite =
        AllFinite(data, piece.bytes, store_->params()[piece.key].scalar_type());
    if (finite)
      rule_->AddPiece(peer.worker, piece.key, piece.offset, piece.bytes);
  }
  if (!finite) {
    Refuse(peer, piece.key, "");
    return -1;
  }
  return piece.key;
}

// A compressed record is read whole, a piece at a time, into the peer's
// record buffer, and decoded once its last piece is in (ReadRecord).
void PushReader::PlanRecord(WorkerPeer& peer, const wire::TensorDesc& desc,
                            ReadPlan* plan) {
  constexpr uint64_t kPiece = ParameterServer::kPieceBytes;
  const int k = static_cast<int>(desc.key);
  for (uint64_t off = 0; off < desc.nbytes; off += kPiece) {
    const uint64_t n = std::min(kPiece, desc.nbytes - off);
    WorkerPeer::Piece piece{k, off, n};
    if (off + n == desc.nbytes)
      piece.record_bytes = desc.nbytes;
    peer.pieces.push_back(piece);
    plan->buffers.push_back({peer.record.data() + off, n});
  }
}

int PushReader::Read(WorkerPeer& peer, size_t index) {
  const WorkerPeer::Piece& piece = peer.pieces[index];
  if (piece.rows != nullptr) {
    ReadRows(peer, index);
    return -1;
  }
  if (formats_->push[piece.key] != wire::Codec::kRaw) {
    return piece.record_bytes > 0
               ? ReadRecord(peer, piece.key, piece.record_bytes)
               : -1;
  }
  return AddRaw(peer, index,
                rule_->PieceBuffer(peer.worker, piece.key, piece.offset));
}

// Checked whole before any of it is added: a sum cannot be taken apart.
int PushReader::ReadRecord(WorkerPeer& peer, int key, uint64_t nbytes) {
  const wire::Codec codec = formats_->push[key];
  const size_t n = static_cast<size_t>(store_->params()[key].numel());
  Status s = wire::Validate(codec, formats_->compression.params,
                            peer.record.data(), nbytes, n);
  if (!s.ok()) {
    Refuse(peer, key, s.message());
    return -1;
  }
  rule_->AddRecord(peer.worker, key, codec, formats_->compression.params,
                   peer.record.data(), nbytes);
  return key;
}

// Raw rows are checked for NaN and Inf; a record is validated (its values
// finite) and decoded where it lies, at the front of RowsBuffer, into the
// float32 rows that the rule reads from there, as raw ones.
void PushReader::ReadRows(WorkerPeer& peer, size_t index) {
  const WorkerPeer::Piece& piece = peer.pieces[index];
  const wire::Codec codec = formats_->push[piece.key];
  if (codec == wire::Codec::kRaw) {
    if (!AllFinite(piece.rows, piece.bytes,
                   store_->params()[piece.key].scalar_type())) {
      Refuse(peer, piece.key, "");
      return;
    }
  } else {
    auto* data = reinterpret_cast<uint8_t*>(piece.rows);
    // Per-element codecs: CheckRows made bytes n codes of this size.
    const size_t n = static_cast<size_t>(
        piece.bytes /
        wire::CompressedBytes(codec, formats_->compression.params, 1));
    Status s = wire::Validate(codec, formats_->compression.params, data,
                              piece.bytes, n);
    if (!s.ok()) {
      Refuse(peer, piece.key, "rows: " + s.message());
      return;
    }
    wire::DecodeInPlace(codec, data, n);
  }
  rule_->AddRows(peer.worker, piece.key);
}

// The step is skipped from this piece on, not from the end of its push:
// until then another worker's piece could still make a key final, and the
// Engine would step it ahead (and start the step's replies) in a step
// already known to be skipped.
void PushReader::Refuse(WorkerPeer& peer, int key, std::string why) {
  peer.refused_key = key;
  peer.refused_why = std::move(why);
  if (rule_->updates_ahead())
    rule_->DiscardStep();
}

void PushReader::AddBatch(WorkerPeer& peer,
                          const std::vector<at::Tensor>& keys) {
  constexpr uint64_t kPiece = ParameterServer::kPieceBytes;
  peer.refused_key = -1;
  peer.refused_why.clear();
  for (size_t k = 0; k < keys.size() && peer.refused_key < 0; ++k) {
    const int key = static_cast<int>(k);
    const auto* src = static_cast<const char*>(keys[k].data_ptr());
    const uint64_t nbytes = keys[k].nbytes();
    for (uint64_t off = 0; off < nbytes; off += kPiece) {
      const uint64_t n = std::min(kPiece, nbytes - off);
      char* dst = rule_->PieceBuffer(peer.worker, key, off);
      std::memcpy(dst, src + off, n);
      if (!AllFinite(dst, n, keys[k].scalar_type())) {
        peer.refused_key = key;  // the step goes on without it, as a push's
        break;
      }
      rule_->AddPiece(peer.worker, key, off, n);
    }
  }
}

}  // namespace pstrain::ps
