#pragma once
// PushFrames: what a PsClient's pushes carry, and nothing of how they
// travel. It owns the push metas (wire::PushPull, wire::Push): the
// descriptors of the attached gradients in send order (PushOrder), raw or
// as the compressor's records, and of the row-sparse slots' rows and the
// rows the next batch asks for (share/doc/design.md, "Sparse rows"); and
// it adds their bytes to a frame, each gradient on its gate mark, tagged
// under --priority, the rows last once the gate is fully open. The bytes
// are borrowed: the gradients' storage, the records and the slots' rows,
// which must stay put until the frame is written. No I/O. Not thread-safe:
// PsClient changes it between calls only.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "wire/messages.h"
#include "worker/push_order.h"
#include "worker/sparse_slot.h"

namespace pstrain::net {
class FrameBuffers;
class SendGate;
}  // namespace pstrain::net

namespace pstrain::worker {

class PushCompressor;

class PushFrames {
 public:
  /// The gradients pushes come from: contiguous CPU tensors, key order;
  /// no marks, no gate, no row-sparse key.
  void Attach(std::vector<at::Tensor> grads);
  /// Pushes wait on `gate` (which must outlive this object; nullptr:
  /// none): gradient k for marks[k].
  void SetGate(net::SendGate* gate, std::vector<uint32_t> marks);
  /// --priority (PushOrder::Tags).
  void SetPriority(bool priority);
  /// The row-sparse slots (`*slots` must outlive this object; nullptr:
  /// none): their keys travel as rows, after the dense keys.
  void SetSparse(std::vector<SparseSlot>* slots);
  /// Compressed keys travel as `compressor`'s records (which must outlive
  /// this object, or until the next call); nullptr: all raw.
  void SetCompressor(PushCompressor* compressor);

  /// The meta of a push_pull of gradients computed on `version`, its rows
  /// and row requests as the slots hold them now.
  const wire::PushPull& PushPullMeta(uint64_t version);
  /// The same, for a push without a reply's parameters.
  const wire::Push& PushMeta(uint64_t version);
  /// Adds the bytes the last meta describes to `frame` (Reset already),
  /// and sets its gate.
  void AddData(net::FrameBuffers& frame) const;

  /// The dense keys in send order.
  const std::vector<uint32_t>& order() const { return order_.order(); }

 private:
  // Whether pushes carry rows, and whether they are tagged.
  bool has_rows() const { return sparse_ != nullptr && !sparse_->empty(); }
  bool tagged() const { return order_.Tags(gate_ != nullptr, has_rows()); }
  // The gradients' descriptors, in send order, into both metas.
  void Describe();
  // The slots' rows and requests, into push_pull_.
  void DescribeRows();
  void AddRows(net::FrameBuffers& frame) const;

  std::vector<at::Tensor> grads_;
  net::SendGate* gate_ = nullptr;
  PushOrder order_;
  std::vector<SparseSlot>* sparse_ = nullptr;
  PushCompressor* compressor_ = nullptr;
  wire::PushPull push_pull_;  // descriptors built once
  wire::Push push_;
};

}  // namespace pstrain::worker
