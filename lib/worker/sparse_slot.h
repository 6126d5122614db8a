#pragma once
// SparseSlot: one row-sparse key among a PsClient's attached tensors
// (ps/job/sparse_keys.h), as its push_pulls carry it: the rows a push
// sends and asks for, and where the reply's rows land.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "wire/tensor_desc.h"

namespace pstrain::worker {

/// What the next push_pull carries of one row-sparse key and asks for.
/// The owner (the training loop, through ServerGroup) fills it before each
/// push_pull; `push_rows` may be filled until the gate opens fully
/// (GradStream::End), as the rows leave last. Ids are the slice's own rows
/// (model row minus the slice's first), ascending and unique. The codecs are
/// the job's rule for the key (ps::PushRowsCodecOf, ps::PullRowsCodecOf): raw,
/// fp16 or bf16.
struct SparseSlot {
  uint32_t key = 0;               // index among the attached tensors
  std::vector<int64_t> push_ids;  // rows this batch touched
  at::Tensor push_rows;           // float32 [push_ids.size(), row_dim]
  std::vector<int64_t> want_ids;  // rows the next batch looks up
  at::Tensor reply_rows;          // where the reply's rows land, float32
  /// What push_rows travel in. Not raw: push_record carries them, sized
  /// (wire::CompressedBytes) with push_rows and filled when they are.
  wire::Codec push_codec = wire::Codec::kRaw;
  std::vector<uint8_t> push_record;
  /// What the reply's rows must come in; a record of them is read into
  /// reply_rows' front and decoded there (wire::DecodeInPlace).
  wire::Codec pull_codec = wire::Codec::kRaw;
};

}  // namespace pstrain::worker
