#pragma once
// BatchRows: what a worker knows of its row-sparse keys (ps/sparse_keys.h)
// beyond the servers: which model keys they are, the ids each batch looks
// up (TrainerOptions::batch_ids), unique and ascending, and the statistics
// of the run's rows (share/doc/statistics.md). Not thread-safe: the
// training thread's.

#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "report/worker_stats.h"

namespace pstrain::data {
struct Batch;
}  // namespace pstrain::data

namespace pstrain::worker {

class BatchRows {
 public:
  using IdsOf = std::function<at::Tensor(const data::Batch&)>;
  /// `row_sparse`: by model key (ps::RowSparseKeys). `ids_of`: a batch's
  /// ids; empty: its input when that is int64, else none.
  BatchRows(const std::vector<bool>& row_sparse, IdsOf ids_of);

  /// The model keys that are row-sparse, ascending.
  const std::vector<int>& keys() const { return keys_; }
  bool empty() const { return keys_.empty(); }

  /// The ids `batch` looks up, unique and ascending; `count`: they count
  /// towards unique_id_ratio (the batches pushed, not those read ahead).
  std::vector<int64_t> UniqueIds(const data::Batch& batch, bool count);

  /// Fills stats' row fields: `rows_pushed` and `rows_pulled` over all
  /// servers in `steps` steps; `tables`: the row-sparse keys' gradients
  /// (their shapes and dtypes: a whole table each way per step).
  void Stats(uint64_t rows_pushed, uint64_t rows_pulled, int64_t steps,
             const std::vector<at::Tensor>& tables,
             report::WorkerStats* stats) const;

 private:
  std::vector<int> keys_;
  IdsOf ids_of_;
  int64_t ids_seen_ = 0;
  int64_t ids_unique_ = 0;
};

}  // namespace pstrain::worker
