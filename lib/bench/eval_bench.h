#pragma once
// `pstrain bench eval`: how fast the shared evaluator (models/evaluator.h)
// scores a model's test set, for each batch size and thread count asked;
// the measurement behind models::kEvalBatchElements. bench/eval_vs_pytorch.py
// sets it beside PyTorch in Python scoring the same state_dict. Not
// thread-safe: it sets libtorch's and BLAS's thread counts.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace pstrain::bench {

struct EvalBenchOptions {
  /// Model of the zoo and data set, by name. Defaults: "net",
  /// "fashion-mnist".
  std::string model = "net";
  std::string dataset = "fashion-mnist";
  /// Directory of the data set's IDX files; "" = Debian's place for it.
  std::string data_dir;
  /// A checkpoint to score; "" (default): the model as seeded (seed 1).
  std::string checkpoint;
  /// Samples per forward, one row each (times each thread count).
  std::vector<int64_t> batch_sizes = {1, 4, 8, 16, 32, 64, 128, 1000};
  /// libtorch and BLAS threads; 0 means all cores. Default: {1, 0}.
  std::vector<int> threads = {1, 0};
  /// Passes over the test set per row; the fastest counts. Default: 2.
  int repeats = 2;
};

/// Returns {"model", "dataset", "samples" (test images), "default_batch_size"
/// (models::AutoBatchSize of the test set), "rows": [{"threads", "batch_size",
/// "seconds" (one pass, the fastest of `repeats`), "images_per_second",
/// "test_accuracy", "vs_default" (seconds / those of the default batch at
/// the same threads, where measured)}], "best": [{"threads", "batch_size",
/// "seconds"}] (one per thread count)}.
/// Errors: kInvalidArgument for an empty or non-positive list, an unknown
/// model or a checkpoint that does not fit it; the data set's errors.
Result<nlohmann::json> RunEvalBench(const EvalBenchOptions& options);

}  // namespace pstrain::bench
