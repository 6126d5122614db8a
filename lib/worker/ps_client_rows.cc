// The row-sparse keys of a PsClient's push_pulls (share/doc/design.md,
// "Sparse rows"; share/doc/wire-format.md): the rows a push carries and the
// rows its reply brings, raw or in the codecs of the job's rule
// (ps::PushRowsCodecOf, ps::PullRowsCodecOf), which SparseSlot holds.

#include <string>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "net/send_gate.h"
#include "ps/job/tensor_codec.h"
#include "wire/compression.h"
#include "worker/ps_client.h"

namespace pstrain::worker {

void PsClient::DescribeRows() {
  push_msg_.rows.clear();
  push_msg_.requests.clear();
  if (sparse_ == nullptr)
    return;
  for (const SparseSlot& slot : *sparse_) {
    wire::SparseRows rows;
    rows.rows = ps::DescribeTensor(slot.key, slot.push_rows);
    if (slot.push_codec != wire::Codec::kRaw) {
      rows.rows.codec = slot.push_codec;
      rows.rows.nbytes = slot.push_record.size();
    }
    rows.ids = slot.push_ids;
    push_msg_.rows.push_back(std::move(rows));
    push_msg_.requests.push_back({slot.key, slot.want_ids});
  }
}

// A row-sparse key's rows leave last, once the gate is fully open: the
// training loop gathers (and codes) them from the whole gradient after
// backward.
void PsClient::AddRows(net::FrameBuffers& req) const {
  if (sparse_ == nullptr)
    return;
  const uint32_t mark = gate_ != nullptr ? net::SendGate::kAll : 0;
  for (const SparseSlot& slot : *sparse_) {
    if (slot.push_codec != wire::Codec::kRaw) {
      if (!slot.push_record.empty())
        req.AddData(slot.push_record.data(), slot.push_record.size(), mark);
    } else if (slot.push_rows.nbytes() > 0) {
      req.AddData(slot.push_rows.data_ptr(), slot.push_rows.nbytes(), mark);
    }
  }
}

// Rows come as asked, slot by slot, each in the slot's pull codec; a
// record lands at the front of the float32 rows it decodes into.
Status PsClient::PlanReplyRows(std::vector<asio::mutable_buffer>* dst) {
  for (size_t i = 0; i < reply_.rows.size(); ++i) {
    const wire::SparseRows& r = reply_.rows[i];
    const std::string what = "params: rows " + std::to_string(i) + " of key " +
                             std::to_string(r.rows.key);
    if (sparse_ == nullptr || i >= sparse_->size() ||
        (*sparse_)[i].key != r.rows.key ||
        r.rows.dims[1] != params_[r.rows.key].size(1) ||
        (!r.ids.empty() && r.ids.back() >= params_[r.rows.key].size(0))) {
      return Corruption(what + " were not asked for");
    }
    SparseSlot& slot = (*sparse_)[i];
    if (r.rows.codec != slot.pull_codec) {
      return Corruption(what + " are in " + wire::CodecName(r.rows.codec) +
                        ", expected " + wire::CodecName(slot.pull_codec));
    }
    slot.reply_rows =
        at::empty({r.rows.dims[0], r.rows.dims[1]},
                  params_[slot.key].options().requires_grad(false));
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

void PsClient::ApplyRows(size_t index) {
  const SparseSlot& slot = (*sparse_)[piece_slots_[index]];
  const wire::SparseRows& r = reply_.rows[piece_slots_[index]];
  if (slot.pull_codec != wire::Codec::kRaw) {
    auto* data = static_cast<uint8_t*>(slot.reply_rows.data_ptr());
    const size_t n = static_cast<size_t>(slot.reply_rows.numel());
    Status s = wire::Validate(slot.pull_codec, {}, data, r.rows.nbytes, n);
    if (!s.ok()) {
      if (pull_error_.ok()) {
        pull_error_ = Corruption(
            "params: rows " + std::to_string(piece_slots_[index]) + " of key " +
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
  params_[slot.key].index_copy_(0, ids, slot.reply_rows);
}

}  // namespace pstrain::worker
