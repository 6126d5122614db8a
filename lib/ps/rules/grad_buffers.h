#pragma once
// GradBuffers: one gradient buffer per worker, where its pushed bytes land
// whole as they are read (async, ssp, buffered sync), so that nothing is
// added while a push is read and a refused push is never applied. Tensors
// of the params' dtypes and shapes, contiguous; a row-sparse key has none
// (its rows land in ParameterServer::RowsBuffer). Not thread-safe.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/store/parameter_server.h"
#include "wire/compression.h"

namespace pstrain::ps {

class GradBuffers {
 public:
  /// Zeroed buffers for each of `store`'s workers and dense or buffer keys.
  explicit GradBuffers(const ParameterServer& store);

  /// Worker `w`'s buffers, by key. REQUIRES: 0 <= w < num_workers.
  const std::vector<at::Tensor>& of(int w) const { return buffers_[w]; }
  /// Where bytes [offset, ...) of worker `w`'s key `key` land.
  char* Piece(int w, int key, uint64_t offset) {
    return static_cast<char*>(buffers_[w][key].data_ptr()) + offset;
  }
  /// Decodes worker `w`'s compressed record of float32 key `key`
  /// (wire/compression.h, checked by wire::Validate) into its buffer: a
  /// record of topk names only some elements, and the rest are zero.
  void DecodeRecord(int w, int key, wire::Codec codec,
                    const wire::CodecParams& params, const uint8_t* data,
                    uint64_t nbytes);

 private:
  std::vector<std::vector<at::Tensor>> buffers_;  // [worker][key]
};

}  // namespace pstrain::ps
