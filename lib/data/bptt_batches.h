#pragma once
// BpttBatches: a token stream cut for truncated backpropagation through
// time, as pytorch/examples' word_language_model does it. Batchify lays the
// stream out as `columns` contiguous streams side by side (column j holds
// tokens [j*rows, (j+1)*rows)); a window i is rows [i*bptt, i*bptt + len)
// of them, len = min(bptt, rows - 1 - i*bptt), and its targets are the
// same rows shifted by one. A worker of a job takes its own columns of the
// global layout (workers * batch_size columns), so that N workers of batch
// b see, together, the columns one process of batch N*b sees. A value type
// over a shared, never written tensor; thread-safe.

#include <cstdint>

#include <torch/types.h>

namespace pstrain::data {

/// data: int64 [n]. Returns int64 [n / columns, columns], contiguous: the
/// tail that does not fill a row is dropped. REQUIRES: columns >= 1.
torch::Tensor Batchify(const torch::Tensor& data, int64_t columns);

struct BpttWindow {
  torch::Tensor input;   ///< int64 [len, b], contiguous
  torch::Tensor target;  ///< int64 [len * b]: input's next tokens, row-major
};

class BpttBatches {
 public:
  /// `batched` from Batchify; this reader takes columns [first, first +
  /// count). REQUIRES: 0 <= first, count >= 1, first + count <=
  /// batched.size(1), bptt >= 1.
  BpttBatches(torch::Tensor batched, int64_t first, int64_t count,
              int64_t bptt);

  /// Windows in one pass: ceil((rows - 1) / bptt); 0 when rows < 2.
  int64_t size() const;
  /// Target tokens in one pass: (rows - 1) * columns.
  int64_t tokens() const;
  /// Window i. REQUIRES: 0 <= i < size().
  BpttWindow Get(int64_t i) const;

 private:
  torch::Tensor columns_;  // [rows, count]
  int64_t bptt_;
};

}  // namespace pstrain::data
