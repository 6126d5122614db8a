#include "worker/batch_rows.h"

#include <algorithm>
#include <tuple>

#include <ATen/ATen.h>

#include "data/dataset.h"

namespace pstrain::worker {

BatchRows::BatchRows(const std::vector<bool>& row_sparse, IdsOf ids_of)
    : ids_of_(std::move(ids_of)) {
  for (size_t k = 0; k < row_sparse.size(); ++k) {
    if (row_sparse[k])
      keys_.push_back(static_cast<int>(k));
  }
}

std::vector<int64_t> BatchRows::UniqueIds(const data::Batch& batch,
                                          bool count) {
  at::Tensor ids;
  if (ids_of_) {
    ids = ids_of_(batch);
  } else if (batch.images.scalar_type() == at::kLong) {
    ids = batch.images;
  }
  if (!ids.defined())
    return {};
  ids = ids.flatten().cpu().to(at::kLong);
  const at::Tensor unique = std::get<0>(at::_unique(ids, /*sorted=*/true));
  if (count) {
    ids_seen_ += ids.numel();
    ids_unique_ += unique.numel();
  }
  const int64_t* p = unique.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + unique.numel());
}

data::Batch BatchRows::Take(int64_t global, const ReadBatch& read) {
  if (ahead_ != nullptr && ahead_global_ == global) {
    data::Batch batch = std::move(*ahead_);
    ahead_.reset();
    return batch;
  }
  ahead_.reset();
  return read(global);
}

void BatchRows::Plan(int64_t global, int64_t end, int64_t pulls,
                     const data::Batch& batch, const ReadBatch& read,
                     std::vector<int64_t>* now, std::vector<int64_t>* next) {
  *now = UniqueIds(batch, true);
  next->clear();
  asked_for_ = -1;
  pulls_at_plan_ = pulls;
  if (global + 1 >= end)
    return;
  ahead_ = std::make_unique<data::Batch>(read(global + 1));
  ahead_global_ = asked_for_ = global + 1;
  *next = UniqueIds(*ahead_, false);
}

// A row on the wire is its bytes and its i64 id; a whole table each way
// is what dense keys cost.
void BatchRows::Stats(uint64_t rows_pushed, uint64_t rows_pulled, int64_t steps,
                      const std::vector<at::Tensor>& tables,
                      report::WorkerStats* stats) const {
  if (keys_.empty() || steps <= 0)
    return;
  const double n = static_cast<double>(steps);
  stats->sparse_rows_pushed_per_step = static_cast<double>(rows_pushed) / n;
  stats->sparse_rows_pulled_per_step = static_cast<double>(rows_pulled) / n;
  stats->unique_id_ratio =
      ids_seen_ > 0 ? static_cast<double>(ids_unique_) / ids_seen_ : 0.0;
  uint64_t whole = 0, row_bytes = 0;
  for (int k : keys_) {
    const at::Tensor& t = tables[k];
    whole += 2 * t.nbytes() * static_cast<uint64_t>(steps);
    row_bytes = std::max<uint64_t>(row_bytes, t.nbytes() / t.size(0) + 8);
  }
  const uint64_t sent = (rows_pushed + rows_pulled) * row_bytes;
  stats->sparse_bytes_saved = whole > sent ? whole - sent : 0;
}

}  // namespace pstrain::worker
