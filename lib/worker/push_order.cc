#include "worker/push_order.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace pstrain::worker {

void PushOrder::Reset(size_t keys) {
  marks_.assign(keys, 0);
}

void PushOrder::SetMarks(std::vector<uint32_t> marks) {
  const size_t keys = marks_.size();
  marks_ = std::move(marks);
  marks_.resize(keys, 0);
}

void PushOrder::ClearRowKeys() {
  row_keys_.assign(marks_.size(), false);
}

void PushOrder::AddRowKey(uint32_t key) {
  row_keys_.resize(marks_.size(), false);
  row_keys_.at(key) = true;
}

void PushOrder::Plan(bool gated, bool rows) {
  order_.resize(marks_.size());
  std::iota(order_.begin(), order_.end(), 0);
  // Stable: keys of one mark (slices of one layer, say) stay in key order.
  if (!Tags(gated, rows)) {
    std::stable_sort(
        order_.begin(), order_.end(),
        [this](uint32_t a, uint32_t b) { return marks_[a] < marks_[b]; });
  }
  row_keys_.resize(marks_.size(), false);
  order_.erase(std::remove_if(order_.begin(), order_.end(),
                              [this](uint32_t k) { return row_keys_[k]; }),
               order_.end());
}

}  // namespace pstrain::worker
