#pragma once
// PullRecords: a server's parameters coded for --pull_compression (fp16 or
// bf16), one record per key, made once per version however many workers
// pull them. The parameters themselves stay float32 (the masters the
// optimizer steps); only what travels is rounded. A record is rewritten
// only where the parameters change (a step), which the WriteFence already
// keeps from overlapping a write of them. Not thread-safe.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/job/compression_spec.h"

namespace pstrain::ps {

class PullRecords {
 public:
  /// `params`: the server's keys; `row_sparse`, by key (empty: none):
  /// keys whose rows travel as rows (coded by the Engine as
  /// PullRowsCodecOf says), and whole, in a pull, raw. A key travels as
  /// PullCodecOf(c, requires_grad, param) says.
  void Init(const CompressionSpec& c, const std::vector<at::Tensor>& params,
            const std::vector<bool>& row_sparse);

  wire::Codec codec(int key) const { return codecs_[key]; }
  /// The record's size in bytes. REQUIRES: codec(key) is not raw.
  uint64_t nbytes(int key) const { return records_[key].size(); }
  /// The record of `key`, valid for as long as this object lives; its
  /// bytes are rewritten by Encode and Refresh.
  const uint8_t* data(int key) const { return records_[key].data(); }

  /// Codes `param` (key `key`, float32, contiguous) as of `version`.
  void Encode(int key, const at::Tensor& param, uint64_t version);
  /// Encode, unless the record is of `version` already.
  void Refresh(int key, const at::Tensor& param, uint64_t version) {
    if (versions_[key] != version)
      Encode(key, param, version);
  }

 private:
  std::vector<wire::Codec> codecs_;
  wire::CodecParams params_;
  std::vector<std::vector<uint8_t>> records_;  // empty for raw keys
  std::vector<uint64_t> versions_;             // of each record
};

}  // namespace pstrain::ps
