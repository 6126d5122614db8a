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

#include "ps/job/job_spec.h"
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
  // --warmup_steps, as versions: the lr of version v < warmup_versions is
  // the schedule's times (v + 1) / warmup_versions. 0: none.
  int64_t warmup_versions = 0;
};
/// kInvalidArgument "--lr_schedule 'x': expected auto, constant,
/// step:N:GAMMA or cosine". "auto" is not a schedule: see ResolveLrSchedule.
Result<LrSchedule> ParseLrSchedule(const std::string& text);

/// ParseLrSchedule(text), except that "auto" is cosine whenever the run's
/// length is known (`versions` >= 1: ScheduleVersions), and constant
/// otherwise. Why: a run's last steps at a constant lr leave its test
/// accuracy a step's noise away from where annealing lands (the tutorial's
/// Net, one epoch of 2 x 32: 0.857 mean at constant 0.03, 0.878 cosine;
/// resnet18, 300 sync steps: 0.847 against 0.871), and torchvision's
/// recipes all anneal. "constant" keeps the tutorial's recipe.
Result<LrSchedule> ResolveLrSchedule(const std::string& text, int64_t versions);

/// ResolveLrSchedule(spec.lr_schedule, ScheduleVersions(spec)), with
/// warmup_versions VersionsOfSteps(spec, spec.warmup_steps).
Result<LrSchedule> LrScheduleOf(const JobSpec& spec);

/// The lr at server version `version`: constant base_lr; step
/// base_lr * gamma^(version / step_size) (integer division); cosine
/// 0.5 * base_lr * (1 + cos(pi * min(version, total) / total)); each times
/// the warm-up's factor, min(1, (version + 1) / warmup_versions).
/// REQUIRES: total_versions >= 1 for kCosine.
double ScheduledLr(const LrSchedule& schedule, double base_lr, uint64_t version,
                   int64_t total_versions);

/// The versions a cosine schedule spans: spec.total_steps when > 0 (rank 0
/// counts it, ps/job/run_length.h), else VersionsOfSteps(spec,
/// spec.max_steps); 0 when neither is set.
int64_t ScheduleVersions(const JobSpec& spec);

/// The server versions `steps` steps of each worker make: `steps` in sync
/// (one version per step), steps * num_workers in async and ssp (one per
/// push). Saturates at INT64_MAX.
int64_t VersionsOfSteps(const JobSpec& spec, int64_t steps);

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

/// --async_lr: the factor on the lr of every async or ssp push: 1 /
/// spec.num_workers() for "per_sample" (N pushes carry the samples of one
/// sync step, which steps once with --lr on their mean), 1 for "per_push"
/// and in sync. kInvalidArgument "--async_lr 'x': expected per_sample or
/// per_push".
Result<double> AsyncLrShare(const JobSpec& spec);

/// --async_momentum: the momentum the server's optimizer is built with. In
/// async and ssp with "auto", max(0, 1 - N * (1 - spec.momentum)) for N =
/// spec.num_workers(): N workers' staleness acts as momentum 1 - 1/N of its
/// own (Mitliagkas et al., "Asynchrony begets momentum", 2016, section 3),
/// and momenta compose as (1 - total) = (1 - explicit) / N, so this keeps
/// the total at --momentum. spec.momentum otherwise ("keep", "lookahead",
/// sync). kInvalidArgument "--async_momentum 'x': expected
/// lookahead_or_keep, keep, auto or lookahead"; "lookahead"
/// (ps/rules/lookahead.h) in async or ssp needs sgd, 0 < momentum < 1 and
/// no pull compression.
Result<double> AsyncMomentum(const JobSpec& spec);

/// Whether the server sends each worker its parameters looked ahead
/// (ps/rules/lookahead.h; DANA, Hakimi et al. 2019, section 3): async or
/// ssp with "lookahead", or with "lookahead_or_keep" (the default) where it
/// applies: sgd, 0 < momentum < 1, no pull compression, and worker
/// placement (under --placement server no parameters are sent).
/// REQUIRES: a valid spec.
bool UsesLookahead(const JobSpec& spec);

/// `spec` with the momentum AsyncMomentum gives (Nesterov off where that is
/// 0): what the server's optimizers are built from. REQUIRES: a valid spec.
JobSpec ServerOptimizerSpec(const JobSpec& spec);

}  // namespace pstrain::ps
