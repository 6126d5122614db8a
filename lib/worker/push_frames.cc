#include "worker/push_frames.h"

#include <ATen/ATen.h>

#include "net/frame_buffers.h"
#include "net/send_gate.h"
#include "ps/job/tensor_codec.h"
#include "wire/compression.h"
#include "worker/push_compressor.h"

namespace pstrain::worker {

void PushFrames::Attach(std::vector<at::Tensor> grads) {
  grads_ = std::move(grads);
  order_.Reset(grads_.size());
  Describe();
}

void PushFrames::SetGate(net::SendGate* gate, std::vector<uint32_t> marks) {
  gate_ = gate;
  order_.SetMarks(std::move(marks));
  Describe();
}

void PushFrames::SetPriority(bool priority) {
  order_.set_priority(priority);
  Describe();
}

void PushFrames::SetSparse(std::vector<SparseSlot>* slots) {
  sparse_ = slots;
  order_.ClearRowKeys();
  if (slots != nullptr) {
    for (const SparseSlot& slot : *slots)
      order_.AddRowKey(slot.key);
  }
  Describe();
}

void PushFrames::SetCompressor(PushCompressor* compressor) {
  compressor_ = compressor;
  Describe();
}

const wire::PushPull& PushFrames::PushPullMeta(uint64_t version) {
  push_pull_.version = version;
  DescribeRows();
  return push_pull_;
}

const wire::Push& PushFrames::PushMeta(uint64_t version) {
  push_.version = version;
  DescribeRows();
  push_.rows = push_pull_.rows;
  return push_;
}

void PushFrames::Describe() {
  order_.Plan(gate_ != nullptr, has_rows());
  push_pull_.grads.clear();
  for (uint32_t k : order_.order()) {
    wire::TensorDesc d = ps::DescribeTensor(k, grads_[k]);
    if (compressor_ != nullptr && compressor_->compressed(k)) {
      d.codec = compressor_->codec(k);
      d.nbytes = compressor_->record(k).size();
    }
    push_pull_.grads.push_back(d);
  }
  push_.grads = push_pull_.grads;
}

void PushFrames::AddData(net::FrameBuffers& frame) const {
  frame.SetGate(gate_);
  const bool tagged = this->tagged();
  const std::vector<uint32_t>& order = order_.order();
  for (size_t i = 0; i < order.size(); ++i) {
    const uint32_t k = order[i];
    if (tagged)
      frame.AddTag(static_cast<uint32_t>(i));
    if (compressor_ != nullptr && compressor_->compressed(k)) {
      const std::vector<uint8_t>& record = compressor_->record(k);
      frame.AddData(record.data(), record.size(), order_.mark(k));
    } else {
      frame.AddData(grads_[k].data_ptr(), grads_[k].nbytes(), order_.mark(k));
    }
  }
  AddRows(frame);
}

// The rows of the job's rule travel raw or in its codecs
// (ps::PushRowsCodecOf), which SparseSlot holds.
void PushFrames::DescribeRows() {
  push_pull_.rows.clear();
  push_pull_.requests.clear();
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
    push_pull_.rows.push_back(std::move(rows));
    push_pull_.requests.push_back({slot.key, slot.want_ids});
  }
}

// A row-sparse key's rows leave last, once the gate is fully open: the
// training loop gathers (and codes) them from the whole gradient after
// backward.
void PushFrames::AddRows(net::FrameBuffers& frame) const {
  if (sparse_ == nullptr)
    return;
  const uint32_t mark = gate_ != nullptr ? net::SendGate::kAll : 0;
  for (const SparseSlot& slot : *sparse_) {
    if (slot.push_codec != wire::Codec::kRaw) {
      if (!slot.push_record.empty())
        frame.AddData(slot.push_record.data(), slot.push_record.size(), mark);
    } else if (slot.push_rows.nbytes() > 0) {
      frame.AddData(slot.push_rows.data_ptr(), slot.push_rows.nbytes(), mark);
    }
  }
}

}  // namespace pstrain::worker
