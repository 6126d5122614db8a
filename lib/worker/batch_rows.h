#pragma once
// BatchRows: what a worker knows of its row-sparse keys (ps/job/sparse_keys.h)
// beyond the servers: which model keys they are, the ids each batch looks
// up (TrainerOptions::batch_ids), unique and ascending, and the statistics
// of the run's rows (share/doc/statistics.md). Not thread-safe: the
// training thread's.

#include <cstdint>
#include <functional>
#include <memory>
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

  using ReadBatch = std::function<data::Batch(int64_t global)>;
  /// The batch of global step `global`: the one read ahead for it, or
  /// read(global).
  data::Batch Take(int64_t global, const ReadBatch& read);
  /// Whether the tables must be pulled whole before step `global`'s
  /// forward: its batch's rows were not asked for, and no pull (`pulls`:
  /// ServerGroup::pulls) came since they were.
  bool NeedsPull(int64_t global, int64_t pulls) const {
    return pulls == pulls_at_plan_ && asked_for_ != global;
  }
  /// Step `global`'s ids into *now (counted), and, unless global + 1 is
  /// `end`, the next batch's, read ahead with `read`, into *next: what its
  /// push_pull carries and asks for. `pulls` as for NeedsPull.
  void Plan(int64_t global, int64_t end, int64_t pulls,
            const data::Batch& batch, const ReadBatch& read,
            std::vector<int64_t>* now, std::vector<int64_t>* next);

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
  std::unique_ptr<data::Batch> ahead_;  // the next batch, read ahead
  int64_t ahead_global_ = -1;
  int64_t asked_for_ = -1;      // the step whose rows were asked for
  int64_t pulls_at_plan_ = -1;  // ServerGroup::pulls then
};

}  // namespace pstrain::worker
