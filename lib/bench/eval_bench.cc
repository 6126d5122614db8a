#include "bench/eval_bench.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "data/dataset.h"
#include "models/compute_threads.h"
#include "models/evaluator.h"
#include "models/model_zoo.h"
#include "ps/store/checkpoint.h"

namespace pstrain::bench {

namespace {

using nlohmann::json;

Status Validate(const EvalBenchOptions& o) {
  if (o.batch_sizes.empty() || o.threads.empty() || o.repeats < 1) {
    return InvalidArgument(
        "bench eval: expected batch sizes, thread counts and repeats >= 1");
  }
  for (int64_t b : o.batch_sizes) {
    if (b < 1)
      return InvalidArgument("--batch_sizes " + std::to_string(b) +
                             ": expected >= 1");
  }
  for (int t : o.threads) {
    if (t < 0)
      return InvalidArgument("--threads " + std::to_string(t) +
                             ": expected >= 0");
  }
  return Status::Ok();
}

// The fastest of `repeats` passes, in seconds.
double TimePasses(models::Evaluator& evaluator, int repeats,
                  models::EvalResult* result) {
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    *result = evaluator.Score();
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - t0)
                              .count());
  }
  return best;
}

}  // namespace

Result<json> RunEvalBench(const EvalBenchOptions& o) {
  PS_RETURN_IF_ERROR(Validate(o));
  torch::manual_seed(1);
  PS_ASSIGN_OR_RETURN(std::shared_ptr<models::Model> model,
                      models::MakeModel(o.model));
  PS_ASSIGN_OR_RETURN(
      data::Dataset test,
      data::LoadDataset(o.dataset, o.data_dir, data::Split::kTest));
  if (!o.checkpoint.empty()) {
    PS_ASSIGN_OR_RETURN(ps::NamedTensors state,
                        ps::LoadCheckpointTensors(o.checkpoint));
    models::Evaluator loader(model, test.images, test.labels);
    Status loaded = loader.Load(state);
    if (!loaded.ok())
      return InvalidArgument(o.checkpoint + ": " + loaded.message());
  }
  const int64_t auto_batch = models::AutoBatchSize(test.images);
  const int cores =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  json rows = json::array(), best = json::array();
  for (int asked : o.threads) {
    const int threads = asked == 0 ? cores : asked;
    models::SetComputeThreads(threads);
    json fastest;
    double default_seconds = 0;
    json these = json::array();
    for (int64_t b : o.batch_sizes) {
      models::Evaluator evaluator(model, test.images, test.labels, {b});
      models::EvalResult r;
      const double seconds = TimePasses(evaluator, o.repeats, &r);
      if (b == auto_batch)
        default_seconds = seconds;
      json row = {{"threads", threads},
                  {"batch_size", b},
                  {"seconds", seconds},
                  {"images_per_second", r.samples / seconds},
                  {"test_accuracy", r.accuracy}};
      if (fastest.is_null() || seconds < fastest["seconds"].get<double>()) {
        fastest = {
            {"threads", threads}, {"batch_size", b}, {"seconds", seconds}};
      }
      these.push_back(row);
    }
    for (json& row : these) {
      row["vs_default"] =
          default_seconds > 0
              ? json(row["seconds"].get<double>() / default_seconds)
              : json(nullptr);
      rows.push_back(row);
    }
    best.push_back(fastest);
  }
  return json{{"model", o.model},       {"dataset", o.dataset},
              {"samples", test.size()}, {"default_batch_size", auto_batch},
              {"rows", rows},           {"best", best}};
}

}  // namespace pstrain::bench
