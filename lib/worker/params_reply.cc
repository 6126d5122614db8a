#include "worker/params_reply.h"

#include <string>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "ps/job/tensor_codec.h"
#include "wire/compression.h"

namespace pstrain::worker {

Status ParamsReply::Decode(std::string_view meta) {
  return wire::DecodeMeta(meta, &msg_);
}

void ParamsReply::TakeBatchDone(uint64_t version, bool stop) {
  msg_.version = version;
  msg_.stop = stop;
  msg_.members.clear();
}

Status ParamsReply::Plan(const std::vector<at::Tensor>& params,
                         std::vector<SparseSlot>* slots,
                         std::vector<asio::mutable_buffer>* dst) {
  if (msg_.params.size() + msg_.rows.size() != params.size()) {
    return Corruption("params carries " +
                      std::to_string(msg_.params.size() + msg_.rows.size()) +
                      " tensors, expected " + std::to_string(params.size()));
  }
  piece_keys_.clear();
  piece_slots_.clear();
  error_ = Status::Ok();
  PS_RETURN_IF_ERROR(PlanDense(params, dst));
  return PlanRows(params, slots, dst);
}

// Dense keys come in the server's step order (ps/rules/step_order.h), each
// once; the row-sparse keys came as rows (the server's SendRows).
Status ParamsReply::PlanDense(const std::vector<at::Tensor>& params,
                              std::vector<asio::mutable_buffer>* dst) {
  seen_.assign(params.size(), false);
  for (const wire::TensorDesc& d : msg_.params) {
    const size_t k = d.key;
    if (k >= params.size() || seen_[k])
      return Corruption("params: tensor of key " + std::to_string(d.key) +
                        (k >= params.size() ? " out of range" : " twice"));
    seen_[k] = true;
    const bool coded = d.codec != wire::Codec::kRaw;
    PS_RETURN_IF_ERROR(ps::CheckDescMatches(
        d, k, params[k], "params", coded ? pull_codec_ : wire::Codec::kRaw));
    if (coded) {
      const size_t want = wire::CompressedBytes(
          d.codec, {}, static_cast<size_t>(params[k].numel()));
      if (d.nbytes != want) {
        return Corruption("params: key " + std::to_string(k) + " has " +
                          std::to_string(d.nbytes) + " bytes of " +
                          wire::CodecName(d.codec) + ", expected " +
                          std::to_string(want));
      }
      // The record lands at the front of the tensor it decodes into, as a
      // raw tensor lands in it whole (DecodeRecord): no second buffer.
      dst->emplace_back(params[k].data_ptr(), want);
    } else {
      dst->emplace_back(params[k].data_ptr(), params[k].nbytes());
    }
    piece_keys_.push_back(static_cast<int>(k));
    piece_slots_.push_back(-1);
  }
  return Status::Ok();
}

// Rows come as asked, slot by slot, each in the slot's pull codec; a
// record lands at the front of the float32 rows it decodes into.
Status ParamsReply::PlanRows(const std::vector<at::Tensor>& params,
                             std::vector<SparseSlot>* slots,
                             std::vector<asio::mutable_buffer>* dst) {
  for (size_t i = 0; i < msg_.rows.size(); ++i) {
    const wire::SparseRows& r = msg_.rows[i];
    const std::string what = "params: rows " + std::to_string(i) + " of key " +
                             std::to_string(r.rows.key);
    if (slots == nullptr || i >= slots->size() ||
        (*slots)[i].key != r.rows.key ||
        r.rows.dims[1] != params[r.rows.key].size(1) ||
        (!r.ids.empty() && r.ids.back() >= params[r.rows.key].size(0))) {
      return Corruption(what + " were not asked for");
    }
    SparseSlot& slot = (*slots)[i];
    if (r.rows.codec != slot.pull_codec) {
      return Corruption(what + " are in " + wire::CodecName(r.rows.codec) +
                        ", expected " + wire::CodecName(slot.pull_codec));
    }
    slot.reply_rows =
        at::empty({r.rows.dims[0], r.rows.dims[1]},
                  params[slot.key].options().requires_grad(false));
    const uint64_t want =
        slot.pull_codec == wire::Codec::kRaw
            ? slot.reply_rows.nbytes()
            : wire::CompressedBytes(
                  slot.pull_codec, {},
                  static_cast<size_t>(slot.reply_rows.numel()));
    if (r.rows.nbytes != want) {
      return Corruption(what + " have " + std::to_string(r.rows.nbytes) +
                        " bytes, expected " + std::to_string(want));
    }
    if (r.rows.nbytes > 0) {
      dst->emplace_back(slot.reply_rows.data_ptr(), r.rows.nbytes);
      piece_keys_.push_back(static_cast<int>(slot.key));
      piece_slots_.push_back(static_cast<int>(i));
    }
  }
  return Status::Ok();
}

void ParamsReply::Land(size_t index, const std::vector<at::Tensor>& params,
                       const std::vector<SparseSlot>* slots) {
  if (piece_slots_[index] >= 0)
    WriteRows(index, params, *slots);
  if (IsRecord(index))
    DecodeRecord(index, params);
}

Status ParamsReply::Finish(bool land_all, const std::vector<at::Tensor>& params,
                           const std::vector<SparseSlot>* slots) {
  if (land_all) {
    for (size_t i = 0; i < piece_slots_.size(); ++i)
      Land(i, params, slots);
  }
  Status s = error_;
  error_ = Status::Ok();
  return s;
}

void ParamsReply::DecodeRecord(size_t index,
                               const std::vector<at::Tensor>& params) {
  const int k = piece_keys_[index];
  const wire::TensorDesc& d = msg_.params[index];
  auto* data = static_cast<uint8_t*>(params[k].data_ptr());
  const size_t n = static_cast<size_t>(params[k].numel());
  Status s = wire::Validate(d.codec, {}, data, d.nbytes, n);
  if (!s.ok()) {
    if (error_.ok())  // the first failure is the one to report
      error_ =
          Corruption("params: key " + std::to_string(k) + ": " + s.message());
    return;
  }
  wire::DecodeInPlace(d.codec, data, n);
}

void ParamsReply::WriteRows(size_t index, const std::vector<at::Tensor>& params,
                            const std::vector<SparseSlot>& slots) {
  const int i = piece_slots_[index];
  const SparseSlot& slot = slots[i];
  const wire::SparseRows& r = msg_.rows[i];
  if (slot.pull_codec != wire::Codec::kRaw) {
    auto* data = static_cast<uint8_t*>(slot.reply_rows.data_ptr());
    const size_t n = static_cast<size_t>(slot.reply_rows.numel());
    Status s = wire::Validate(slot.pull_codec, {}, data, r.rows.nbytes, n);
    if (!s.ok()) {
      if (error_.ok()) {
        error_ = Corruption("params: rows " + std::to_string(i) + " of key " +
                            std::to_string(slot.key) + ": " + s.message());
      }
      return;
    }
    wire::DecodeInPlace(slot.pull_codec, data, n);
  }
  c10::NoGradGuard no_grad;  // the attached tensor may be a model's leaf
  at::Tensor ids =
      at::from_blob(const_cast<int64_t*>(r.ids.data()),
                    {static_cast<int64_t>(r.ids.size())}, at::kLong);
  params[slot.key].index_copy_(0, ids, slot.reply_rows);
}

}  // namespace pstrain::worker
