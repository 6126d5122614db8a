#pragma once
// RowSlices: a worker's row-sparse tables (ps/job/sparse_keys.h) as its
// servers hold them: for each server, the SparseSlots its PsClient
// carries, one per slice of a row-sparse table, and beside each the model
// key and row range it is a slice of. Each step it splits the rows a batch
// touches and the next batch looks up over the slices, and after backward
// gathers the touched rows of each slice from the whole gradient (and
// codes them, when the job's rule says so: ps::PushRowsCodecOf). It counts
// the rows pushed and asked for. The slots' addresses are stable from Plan
// to the next Plan: the clients hold them. Not thread-safe: the training
// thread's, between exchanges.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/job/compression_spec.h"
#include "ps/job/shard_plan.h"
#include "worker/sparse_slot.h"

namespace pstrain::worker {

class RowSlices {
 public:
  /// The slots of `plan`'s slices of the model keys `model_keys` marks
  /// (by model key), for each of `plan.num_servers` servers, with the
  /// codecs `compression` gives each table (`tables`: the model's
  /// parameters, by model key) and push rows of `grads`' dtype and row
  /// width (float32 [n, row_dim], by model key). Returns whether any slice
  /// is row-sparse; none are kept when none is.
  bool Plan(const ps::ShardPlan& plan, const std::vector<bool>& model_keys,
            const std::vector<at::Tensor>& tables,
            const std::vector<at::Tensor>& grads,
            const ps::CompressionSpec& compression);
  /// Whether no slice is row-sparse.
  bool empty() const { return slots_.empty(); }
  /// Server `s`'s slots, in its slice order. REQUIRES: !empty().
  std::vector<SparseSlot>* slots(int s) { return &slots_[s]; }
  /// Whether server `s` holds a row-sparse slice of model key `key`.
  bool Holds(int s, int key) const;

  /// Of model key `key`: the model rows this step's batch touched and those
  /// the next batch looks up (each ascending and unique), split over the
  /// slices as each slice's own rows. Sizes each slot's push_rows (and
  /// push_record, coded with `params`) for GatherRows; `grads` as Plan's.
  void SetRows(int key, const std::vector<int64_t>& touched,
               const std::vector<int64_t>& next,
               const std::vector<at::Tensor>& grads,
               const wire::CodecParams& params);
  /// Fills each slot's push_rows with its touched rows of `grads` (by model
  /// key; index_select), and its push_record with them coded in `params`.
  void GatherRows(const std::vector<at::Tensor>& grads,
                  const wire::CodecParams& params);

  /// Rows pushed and asked for by SetRows so far, over all slices.
  uint64_t rows_pushed() const { return rows_pushed_; }
  uint64_t rows_pulled() const { return rows_pulled_; }

 private:
  struct Ref {
    int key;
    int64_t row_begin, row_end;
  };
  std::vector<std::vector<SparseSlot>> slots_;  // by server
  std::vector<std::vector<Ref>> refs_;          // by server, beside slots_
  uint64_t rows_pushed_ = 0;
  uint64_t rows_pulled_ = 0;
};

}  // namespace pstrain::worker
