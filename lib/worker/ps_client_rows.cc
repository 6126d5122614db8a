// The row-sparse keys of a PsClient's push_pulls (share/doc/design.md,
// "Sparse rows"; share/doc/wire-format.md): the rows a push carries and the
// rows its reply brings, raw or in the codecs of the job's rule
// (ps::PushRowsCodecOf, ps::PullRowsCodecOf), which SparseSlot holds.
// The reply's rows land as ParamsReply plans them.

#include <ATen/ATen.h>

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

}  // namespace pstrain::worker
