#pragma once
// The server's optimizer: libtorch's own classes (SGD, Adam, AdamW, Adagrad,
// RMSprop) built from the job spec, the learning-rate schedule advanced by
// the server's version, and the staleness scaling of an async step. No update
// rule is written here; these only choose a class and set its lr.
// Free functions over value types; thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/job_spec.h"
#include "util/result.h"

namespace torch::optim {
class Optimizer;
}

namespace pstrain::ps {

/// "sgd", "adam", "adamw", "adagrad", "rmsprop".
const std::vector<std::string>& OptimizerNames();

/// libtorch's optimizer named by spec.optimizer over `params`, with
/// spec.lr, momentum (sgd, rmsprop), nesterov (sgd), weight_decay, betas
/// (adam, adamw) and eps (adam, adamw, adagrad, rmsprop).
/// REQUIRES: ValidateJobSpec(spec).ok().
std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const JobSpec& spec, const std::vector<at::Tensor>& params);

/// Sets the lr of every param group of `optimizer`. Allocates nothing.
void SetLr(torch::optim::Optimizer& optimizer, double lr);

/// --lr_schedule: "constant", "step:N:GAMMA" (N >= 1, GAMMA > 0), "cosine",
/// or "auto" (ResolveLrSchedule).
struct LrSchedule {
  enum class Kind { kConstant, kStep, kCosine };
  Kind kind = Kind::kConstant;
  int64_t step_size = 1;  // kStep: versions per decay
  double gamma = 1;       // kStep: factor per step_size versions
};
/// kInvalidArgument "--lr_schedule 'x': expected auto, constant,
/// step:N:GAMMA or cosine". "auto" is not a schedule: see ResolveLrSchedule.
Result<LrSchedule> ParseLrSchedule(const std::string& text);

/// ParseLrSchedule(text), except that "auto" is cosine for the ResNets
/// (`model` resnet18, resnet34, resnet50) when the run's length is known
/// (`versions` >= 1: ScheduleVersions), and constant otherwise. Why: a
/// ResNet's last steps at a constant lr 0.03 leave its test accuracy a
/// step's noise away from where annealing lands (resnet18 on Fashion-MNIST,
/// 300 sync steps of 2 x 32: 0.847 constant, 0.871 cosine), and torchvision's
/// ResNet recipes all anneal. The tutorial's Net keeps its constant lr.
Result<LrSchedule> ResolveLrSchedule(const std::string& text,
                                     const std::string& model,
                                     int64_t versions);

/// ResolveLrSchedule(spec.lr_schedule, spec.model, ScheduleVersions(spec)).
Result<LrSchedule> LrScheduleOf(const JobSpec& spec);

/// The lr at server version `version`: constant base_lr; step
/// base_lr * gamma^(version / step_size) (integer division); cosine
/// 0.5 * base_lr * (1 + cos(pi * min(version, total) / total)).
/// REQUIRES: total_versions >= 1 for kCosine.
double ScheduledLr(const LrSchedule& schedule, double base_lr, uint64_t version,
                   int64_t total_versions);

/// The versions a cosine schedule spans: spec.total_steps when > 0, else
/// spec.max_steps (sync: one version per step) or max_steps * num_workers
/// (async, ssp: one version per push); 0 when neither is set.
int64_t ScheduleVersions(const JobSpec& spec);

/// --staleness_lr: "none", "inverse" (lr / max(1, s); Zhang et al. IJCAI
/// 2016), "linear:ALPHA" (lr / (1 + ALPHA * s), ALPHA >= 0).
struct StalenessLr {
  enum class Kind { kNone, kInverse, kLinear };
  Kind kind = Kind::kNone;
  double alpha = 0;  // kLinear
};
/// kInvalidArgument "--staleness_lr 'x': expected none, inverse or
/// linear:ALPHA".
Result<StalenessLr> ParseStalenessLr(const std::string& text);

/// The factor on the lr of one step whose gradient is `staleness` versions
/// old: in (0, 1].
double StalenessScale(const StalenessLr& rule, uint64_t staleness);

}  // namespace pstrain::ps
