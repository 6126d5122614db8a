#pragma once
// ParamsReply: a params reply as it lands in a PsClient's attached tensors.
// Its meta is checked against the tensors and the row-sparse slots before
// a byte of data is read, and it plans where each piece of data lands:
// straight in the tensor it is for (a dense key's parameters, or a
// compressed record of them at the tensor's front), or in a slot's
// reply_rows. As each piece arrives, a record is decoded in place and rows
// are written into their table, so that the parameters are usable piece by
// piece (ParamArrivals) with no staging copy. A record that does not
// decode fails the call, but only once the reply is in whole: the
// connection must read the rest of the frame. Kept from call to call, so
// that a reply of the same layout as the last allocates nothing.
// Not thread-safe: used on the thread of the PsClient's call.

#include <cstddef>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>
#include <asio/buffer.hpp>

#include "util/status.h"
#include "wire/messages.h"
#include "worker/sparse_slot.h"

namespace pstrain::worker {

class ParamsReply {
 public:
  /// Dense keys may come in `codec` (--pull_compression: fp16 or bf16)
  /// besides raw. Default: raw only.
  void set_pull_codec(wire::Codec codec) { pull_codec_ = codec; }

  /// Decodes a params frame's meta; kCorruption as wire::DecodeMeta says.
  Status Decode(std::string_view meta);
  /// The last reply's meta (version, members, stop, descriptors).
  const wire::Params& meta() const { return msg_; }
  /// A --placement server step (wire::BatchDone) stands for the last reply:
  /// its version and stop, and no members.
  void TakeBatchDone(uint64_t version, bool stop);

  /// Checks the decoded meta against `params` (the attached tensors, by
  /// key) and `slots` (the row-sparse keys, nullptr for none) and appends
  /// to `dst` one buffer per piece of data, in frame order: the dense
  /// keys' (a tensor's storage, or its front for a record), then the
  /// rows' (a slot's reply_rows, allocated here to the rows' shape; none
  /// for rows of no bytes). kCorruption naming the key for a count, key,
  /// dtype, shape, codec or size that is not the one asked for.
  Status Plan(const std::vector<at::Tensor>& params,
              std::vector<SparseSlot>* slots,
              std::vector<asio::mutable_buffer>* dst);
  /// The pieces Plan gave a buffer.
  size_t pieces() const { return piece_keys_.size(); }
  /// The attached tensor piece `index` is for. REQUIRES: index < pieces().
  int key(size_t index) const { return piece_keys_[index]; }
  /// Piece `index` has arrived: decodes a record in place and writes
  /// rows into their table (index_copy_). A failure is kept for Finish.
  /// The arguments are Plan's. REQUIRES: index < pieces().
  void Land(size_t index, const std::vector<at::Tensor>& params,
            const std::vector<SparseSlot>* slots);
  /// The reply is in whole: lands every piece first when `land_all` (no
  /// piece was reported as it arrived), then returns the first failure
  /// Land kept (kCorruption naming the key), and forgets it.
  Status Finish(bool land_all, const std::vector<at::Tensor>& params,
                const std::vector<SparseSlot>* slots);

 private:
  Status PlanDense(const std::vector<at::Tensor>& params,
                   std::vector<asio::mutable_buffer>* dst);
  Status PlanRows(const std::vector<at::Tensor>& params,
                  std::vector<SparseSlot>* slots,
                  std::vector<asio::mutable_buffer>* dst);
  // Whether piece `index` is a compressed record: the dense keys' pieces
  // come first, one per msg_.params entry.
  bool IsRecord(size_t index) const {
    return index < msg_.params.size() &&
           msg_.params[index].codec != wire::Codec::kRaw;
  }
  void DecodeRecord(size_t index, const std::vector<at::Tensor>& params);
  void WriteRows(size_t index, const std::vector<at::Tensor>& params,
                 const std::vector<SparseSlot>& slots);

  wire::Codec pull_codec_ = wire::Codec::kRaw;
  wire::Params msg_;
  std::vector<bool> seen_;        // by attached tensor: in this reply
  std::vector<int> piece_keys_;   // by piece: attached tensor
  std::vector<int> piece_slots_;  // ... and sparse slot, or -1
  Status error_;                  // Land's first failure
};

}  // namespace pstrain::worker
