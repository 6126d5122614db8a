#include "data/bptt_batches.h"

#include <algorithm>

#include "util/check.h"

namespace pstrain::data {

torch::Tensor Batchify(const torch::Tensor& data, int64_t columns) {
  PS_CHECK(columns >= 1) << "columns " << columns;
  const int64_t rows = data.size(0) / columns;
  return data.narrow(0, 0, rows * columns)
      .view({columns, rows})
      .t()
      .contiguous();
}

BpttBatches::BpttBatches(torch::Tensor batched, int64_t first, int64_t count,
                         int64_t bptt)
    : bptt_(bptt) {
  PS_CHECK(batched.dim() == 2 && first >= 0 && count >= 1 &&
           first + count <= batched.size(1) && bptt >= 1)
      << "columns [" << first << ", " << first + count << ") of "
      << batched.sizes() << ", bptt " << bptt;
  columns_ = batched.narrow(1, first, count);
}

int64_t BpttBatches::size() const {
  const int64_t rows = columns_.size(0);
  return rows < 2 ? 0 : (rows - 1 + bptt_ - 1) / bptt_;
}

int64_t BpttBatches::tokens() const {
  return std::max<int64_t>(0, columns_.size(0) - 1) * columns_.size(1);
}

BpttWindow BpttBatches::Get(int64_t i) const {
  PS_CHECK(i >= 0 && i < size()) << "window " << i << " of " << size();
  const int64_t start = i * bptt_;
  const int64_t len = std::min(bptt_, columns_.size(0) - 1 - start);
  BpttWindow w;
  w.input = columns_.narrow(0, start, len).contiguous();
  w.target = columns_.narrow(0, start + 1, len).contiguous().view({-1});
  return w;
}

}  // namespace pstrain::data
