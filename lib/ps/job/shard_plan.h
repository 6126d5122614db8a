#pragma once
// ShardPlan: which server holds which part of which parameter, when
// --num_servers S > 1 (Li et al., OSDI 2014, section 4.1: keys partitioned
// over server nodes). Every process computes the same plan from the model
// fingerprint, S and --slice_bytes, so the plan never travels.
//
//   1. With S > 1, or with one server in streaming sync (PlanShardsOf: a
//      step's slices are stepped and sent as they come in,
//      ps/rules/step_order.h, so a large key must not hold the reply up until
//      it is whole), a key larger than slice_bytes is split by rows (dim 0)
//      into as few slices of at most slice_bytes as whole rows allow (one
//      row per slice where a row is larger), whose row counts differ by at
//      most one. Keys of rank 0 or of 1 row stay whole.
//   2. Slices are assigned largest first to the server holding the fewest
//      bytes so far (LPT; Graham, 1969), ties to the lower index, so bytes
//      are balanced within the largest slice.
//   3. A server's slices are its keys, in (model key, first row) order.
// Otherwise, with S = 1, every key is one whole slice on server 0.
// A value type.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/job/job_spec.h"
#include "util/result.h"
#include "wire/messages.h"

namespace pstrain::ps {

struct Slice {
  int key = 0;            // index in models::ModelState(model)
  int64_t row_begin = 0;  // rows [row_begin, row_end) of dim 0
  int64_t row_end = 0;    // rank-0 keys: 0, 1
  uint64_t bytes = 0;
  int server = 0;
  bool whole = true;  // the slice is the entire key
};

struct ShardPlan {
  int num_servers = 1;
  std::vector<Slice> slices;                // in (key, row_begin) order
  std::vector<std::vector<int>> by_server;  // indices into slices, in order
  std::vector<uint64_t> server_bytes;       // bytes per server

  /// Largest server's bytes over the mean (1.0 = perfectly balanced).
  double imbalance() const;
};

/// kInvalidArgument when num_servers < 1 or slice_bytes == 0. `split`:
/// large keys are sliced even with one server.
Result<ShardPlan> PlanShards(const std::vector<wire::KeySpec>& keys,
                             int num_servers, uint64_t slice_bytes,
                             bool split = false);

/// The job's plan: PlanShards over spec.num_servers and spec.slice_bytes,
/// slicing with one server too in streaming sync with the model on the
/// workers (--mode sync, no --backup_workers or --step_timeout).
Result<ShardPlan> PlanShardsOf(const std::vector<wire::KeySpec>& keys,
                               const JobSpec& spec);

/// Server `server`'s slices of `tensors` (one per model key, contiguous, in
/// key order): views sharing their storage, contiguous, in the server's key
/// order. A whole slice is the tensor itself.
std::vector<at::Tensor> SliceViews(const ShardPlan& plan, int server,
                                   const std::vector<at::Tensor>& tensors);

/// As SliceViews, but each partial slice of a parameter is made a leaf that
/// requires grad (for an optimizer) while still sharing the parameter's
/// storage, so updates through the slice show in the whole parameter. A
/// buffer's slices (requires no grad) stay buffers.
std::vector<at::Tensor> SliceLeaves(const ShardPlan& plan, int server,
                                    const std::vector<at::Tensor>& params);

}  // namespace pstrain::ps
