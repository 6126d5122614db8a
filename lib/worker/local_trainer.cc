#include "worker/local_trainer.h"

#include <algorithm>
#include <chrono>

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "data/batch_loader.h"
#include "data/sampler.h"
#include "models/evaluator.h"
#include "models/model_state.h"
#include "models/model_zoo.h"
#include "ps/job/job_data.h"
#include "ps/job/job_module.h"
#include "ps/job/optimizer.h"
#include "worker/device.h"
#include "worker/lm_stream.h"

namespace pstrain::worker {

namespace {

using Clock = std::chrono::steady_clock;

Status Validate(const LocalTrainOptions& o) {
  if (o.steps < 1) {
    return InvalidArgument("steps " + std::to_string(o.steps) +
                           ": expected >= 1");
  }
  if (o.job.batch_size < 1) {
    return InvalidArgument("batch_size " + std::to_string(o.job.batch_size) +
                           ": expected >= 1");
  }
  if (!(o.job.lr > 0))
    return InvalidArgument("lr must be > 0");
  if (o.job.momentum < 0)
    return InvalidArgument("momentum must be >= 0");
  if (o.threads < 0)
    return InvalidArgument("threads must be >= 0");
  PS_RETURN_IF_ERROR(ParseDevice(o.device).status());
  if (o.job.dataset == "text" && o.device != "cpu")
    return InvalidArgument("--device " + o.device + ": text trains on cpu");
  const auto& names = ps::OptimizerNames();
  if (std::find(names.begin(), names.end(), o.job.optimizer) == names.end())
    return InvalidArgument("unknown optimizer '" + o.job.optimizer + "'");
  return ps::ResolveLrSchedule(o.job.lr_schedule, o.steps).status();
}

// Validate resolved it once already. One process steps once per step, as
// a sync server does per version.
ps::LrSchedule LocalSchedule(const LocalTrainOptions& o) {
  ps::LrSchedule s = *ps::ResolveLrSchedule(o.job.lr_schedule, o.steps);
  s.warmup_versions = o.job.warmup_steps;
  return s;
}

// The model's trained parameters, once each (a tied weight is one).
std::vector<torch::Tensor> Trained(const torch::nn::Module& model) {
  std::vector<torch::Tensor> out;
  for (const auto& s : models::ModelState(model)) {
    if (!s.is_buffer)
      out.push_back(s.value);
  }
  return out;
}

void Clip(const std::vector<torch::Tensor>& params, double max_norm) {
  if (max_norm > 0)
    torch::nn::utils::clip_grad_norm_(params, max_norm);
}

Result<std::shared_ptr<const data::Source>> Load(const LocalTrainOptions& o,
                                                 data::Split split) {
  data::SourceOptions source;
  source.dataset = o.job.dataset;
  source.data_dir = o.data_dir;
  source.image_size = o.job.image_size;
  source.seed = o.job.seed;
  // Bad data files are bad input (exit 2), as for the worker.
  PS_ASSIGN_OR_RETURN(
      std::shared_ptr<const data::Source> s,
      CorruptionAsInvalidArgument(data::OpenSource(source, split)));
  return s;
}

// `steps` SGD steps over as many epochs as they need, or fewer when an
// evaluation reaches the target. Returns the training seconds.
double RunSteps(models::Model& model, models::Loss loss,
                const data::Source& train,
                const std::shared_ptr<const data::Source>& test,
                const LocalTrainOptions& o, LocalRunStats* stats) {
  data::ShardSampler sampler(train.size(), 1, 0, o.job.batch_size, o.job.seed);
  data::BatchLoader loader(train, o.job.data_threads, o.job.data_threads + 1);
  const int64_t per_epoch = sampler.steps_per_epoch();
  int64_t requested = 0;
  auto request = [&] {
    while (loader.pending() <= o.job.data_threads && requested < o.steps) {
      const int64_t epoch = requested / per_epoch;
      loader.Request(requested,
                     sampler.BatchIndices(epoch, requested % per_epoch), epoch);
      ++requested;
    }
  };
  const auto params = Trained(model);
  auto optimizer = ps::MakeOptimizer(o.job, params);
  const ps::LrSchedule schedule = LocalSchedule(o);
  const bool evaluate = o.job.target_accuracy > 0 && o.job.eval_interval > 0;
  const torch::Device device = params.front().device();
  // A GPU's queue is empty before a clock reads: its time is the work's.
  auto drained = [&device] {
    if (device.is_cuda())
      torch::cuda::synchronize(device.index());
    return Clock::now();
  };
  model.train();
  double seconds = 0;
  auto start = drained();
  int64_t done = 0;
  for (int64_t epoch = 0; done < o.steps; ++epoch) {
    for (int64_t step = 0; step < sampler.steps_per_epoch() && done < o.steps;
         ++step) {
      request();
      data::Batch batch = loader.Take();
      stats->samples += batch.labels.size(0);
      stats->skipped_samples += batch.skipped;
      ps::SetLr(*optimizer, ps::ScheduledLr(schedule, o.job.lr, done, o.steps));
      optimizer->zero_grad();
      models::ComputeLoss(loss, model.forward(batch.images.to(device)),
                          batch.labels.to(device))
          .backward();
      Clip(params, o.job.clip_grad_norm);
      optimizer->step();
      ++done;
      if (!evaluate || done % o.job.eval_interval != 0)
        continue;
      seconds += std::chrono::duration<double>(drained() - start).count();
      models::EvaluatorOptions eval;
      eval.loss = loss;
      const double accuracy =
          ps::MakeEvaluator(
              std::shared_ptr<models::Model>(&model, [](models::Model*) {}),
              test, eval)
              ->Score()
              .accuracy;
      model.train();
      if (accuracy >= o.job.target_accuracy) {
        stats->time_to_target_seconds = seconds;
        stats->steps_to_target = done;
        return seconds;
      }
      start = Clock::now();
    }
  }
  return seconds + std::chrono::duration<double>(drained() - start).count();
}

// Sets libtorch's intra-op threads for its lifetime (0: leaves them).
class ThreadCount {
 public:
  explicit ThreadCount(int threads) : previous_(at::get_num_threads()) {
    if (threads > 0)
      at::set_num_threads(threads);
  }
  ~ThreadCount() {
    if (at::get_num_threads() != previous_)
      at::set_num_threads(previous_);
  }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int previous_;
};

// --dataset text: `steps` windows of the corpus in batch_size streams (an
// epoch is a pass of windows; the state starts at zeros in each), then the
// test split's perplexity. No target: a language model runs its steps.
Result<LocalRunStats> TrainTextLocally(const LocalTrainOptions& o) {
  ps::JobSpec spec = o.job;
  PS_ASSIGN_OR_RETURN(auto corpus, ps::OpenJobCorpus(spec, o.data_dir));
  spec.num_classes = corpus->vocab.size();
  torch::manual_seed(o.job.seed);
  PS_ASSIGN_OR_RETURN(std::shared_ptr<models::Model> model,
                      ps::MakeJobModel(spec));
  auto* lm = dynamic_cast<models::LanguageModel*>(model.get());
  if (lm == nullptr)
    return InvalidArgument("--dataset text: --model " + o.job.model +
                           " is not a language model");
  LmStream stream(corpus->train, o.job.batch_size, 0, o.job.batch_size,
                  o.job.bptt);
  if (stream.steps_per_epoch() == 0)
    return InvalidArgument("batch_size " + std::to_string(o.job.batch_size) +
                           ": the training split is too short");
  ThreadCount thread_count(o.threads);
  LocalRunStats stats;
  stats.threads = at::get_num_threads();
  const auto params = Trained(*model);
  auto optimizer = ps::MakeOptimizer(spec, params);
  const ps::LrSchedule schedule = LocalSchedule(o);
  model->train();
  const auto start = Clock::now();
  try {
    for (int64_t step = 0; step < o.steps; ++step) {
      ps::SetLr(*optimizer, ps::ScheduledLr(schedule, o.job.lr, step, o.steps));
      optimizer->zero_grad();
      int64_t tokens = 0;
      stream.Loss(*lm, step % stream.steps_per_epoch(), torch::kCPU, &tokens)
          .backward();
      Clip(params, o.job.clip_grad_norm);
      optimizer->step();
      stats.samples += tokens;
    }
  } catch (const c10::Error& e) {
    return InvalidArgument(std::string("training failed: ") +
                           e.what_without_backtrace());
  }
  stats.wall_seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  stats.steps = o.steps;
  stats.samples_per_second =
      stats.wall_seconds > 0 ? stats.samples / stats.wall_seconds : 0.0;
  models::EvalResult eval =
      ps::MakeLmEvaluator(model, corpus->test, o.job.bptt)->Score();
  stats.test_accuracy = eval.accuracy;
  stats.test_loss = eval.loss;
  stats.test_perplexity = eval.perplexity;
  return stats;
}

}  // namespace

Result<LocalRunStats> TrainLocally(const LocalTrainOptions& o) {
  PS_RETURN_IF_ERROR(Validate(o));
  if (o.job.dataset == "text")
    return TrainTextLocally(o);
  PS_ASSIGN_OR_RETURN(auto train, Load(o, data::Split::kTrain));
  PS_ASSIGN_OR_RETURN(auto test, Load(o, data::Split::kTest));
  if (o.job.batch_size > train->size()) {
    return InvalidArgument("batch_size " + std::to_string(o.job.batch_size) +
                           " exceeds the " + std::to_string(train->size()) +
                           " training samples");
  }
  ps::JobSpec spec = o.job;
  PS_RETURN_IF_ERROR(models::ParseLoss(o.job.loss).status());
  PS_RETURN_IF_ERROR(ps::ReadModuleFile(&spec));
  ps::SetInputShape(test->shape(), &spec);
  torch::manual_seed(o.job.seed);
  PS_ASSIGN_OR_RETURN(std::shared_ptr<models::Model> model,
                      ps::MakeJobModel(spec));
  PS_RETURN_IF_ERROR(ps::CheckModelOnData(
      spec, *model, *train,
      ps::DataName(spec, o.data_dir, data::Split::kTrain)));
  model->to(*ParseDevice(o.device));  // Validate parsed it
  models::EvaluatorOptions eval;
  eval.loss = ps::LossOf(spec);
  ThreadCount thread_count(o.threads);
  LocalRunStats stats;
  stats.threads = at::get_num_threads();
  try {
    stats.wall_seconds = RunSteps(*model, eval.loss, *train, test, o, &stats);
  } catch (const c10::Error& e) {
    return InvalidArgument(std::string("training failed: ") +
                           e.what_without_backtrace());
  }
  stats.steps = stats.steps_to_target > 0 ? stats.steps_to_target : o.steps;
  stats.samples_per_second =
      stats.wall_seconds > 0 ? stats.samples / stats.wall_seconds : 0.0;
  const models::EvalResult scores =
      ps::MakeEvaluator(model, test, eval)->Score();
  stats.test_accuracy = scores.accuracy;
  stats.test_loss = scores.loss;
  return stats;
}

}  // namespace pstrain::worker
