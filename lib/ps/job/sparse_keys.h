#pragma once
// Which keys are row-sparse (--sparse_embeddings; share/doc/design.md
// "Sparse rows"): the `weight` of every torch::nn::Embedding in the model's
// module tree, found by the module's type wherever it sits, when the job has
// --sparse_embeddings and its optimizer can update rows lazily
// (HasLazyRows). Such a key travels as (unique row ids, rows):
// a worker pushes the rows its batch touched and names those of its next
// batch; the server updates only the touched rows. With several servers a
// row-sparse key is split by the shard plan like any key (ps/job/shard_plan.h:
// contiguous row ranges, when it is larger than --slice_bytes), and each
// slice is a table of its own on its server, its rows numbered from 0.
// Every process computes the same answer from the spec and the model, so
// it never travels. Free functions; thread-compatible.

#include <cstdint>
#include <vector>

#include "ps/job/job_spec.h"
#include "ps/job/shard_plan.h"

namespace torch::nn {
class Module;
}

namespace pstrain::ps {

/// Whether `spec`'s optimizer can update rows lazily
/// (ps/store/row_optimizer.h): sgd, adagrad and adam with no weight decay (a
/// decay would move every row every step).
bool HasLazyRows(const JobSpec& spec);

/// For each key of models::ModelState(module), in order: whether it is
/// row-sparse for `spec`. All false when spec.sparse_embeddings is off or
/// the optimizer has no lazy rows.
std::vector<bool> RowSparseKeys(const JobSpec& spec,
                                const torch::nn::Module& module);

/// For each of server `server`'s slices of `plan`, in its key order:
/// whether the model key it is a slice of is row-sparse (`model_keys`, by
/// model key). Empty when none is.
std::vector<bool> SliceRowSparse(const ShardPlan& plan, int server,
                                 const std::vector<bool>& model_keys);

/// The ids of `ids` (ascending) in [begin, end), less `begin`: the rows of
/// a slice of rows [begin, end) that `ids` name, in the slice's numbering.
/// Into *out (cleared first; its capacity kept).
void RowsInRange(const std::vector<int64_t>& ids, int64_t begin, int64_t end,
                 std::vector<int64_t>* out);

}  // namespace pstrain::ps
