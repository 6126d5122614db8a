#include "ps/job/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include "ps/job/job_rules.h"
#include "ps/job/rule_traits.h"
#include "util/check.h"

namespace pstrain::ps {

namespace {

// The whole of `text` as a number; false on anything else.
bool ParseDouble(const std::string& text, double* out) {
  if (text.empty())
    return false;
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(*out);
}

bool ParseInt(const std::string& text, int64_t* out) {
  if (text.empty())
    return false;
  char* end = nullptr;
  *out = std::strtoll(text.c_str(), &end, 10);
  return end == text.c_str() + text.size();
}

}  // namespace

const std::vector<std::string>& OptimizerNames() {
  static const std::vector<std::string> names = {"sgd", "adam", "adamw",
                                                 "adagrad", "rmsprop"};
  return names;
}

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const JobSpec& spec, const std::vector<at::Tensor>& params) {
  namespace optim = torch::optim;
  // spec.eps 0: the class's own default.
  auto eps = [&](double fallback) {
    return spec.eps > 0 ? spec.eps : fallback;
  };
  const auto betas = std::make_tuple(spec.betas[0], spec.betas[1]);
  if (spec.optimizer == "sgd") {
    optim::SGDOptions o(spec.lr);
    o.momentum(spec.momentum)
        .nesterov(spec.nesterov)
        .weight_decay(spec.weight_decay);
    return std::make_unique<optim::SGD>(params, o);
  }
  if (spec.optimizer == "adam") {
    optim::AdamOptions o(spec.lr);
    o.betas(betas).eps(eps(1e-8)).weight_decay(spec.weight_decay);
    return std::make_unique<optim::Adam>(params, o);
  }
  if (spec.optimizer == "adamw") {
    optim::AdamWOptions o(spec.lr);
    o.betas(betas).eps(eps(1e-8)).weight_decay(spec.weight_decay);
    return std::make_unique<optim::AdamW>(params, o);
  }
  if (spec.optimizer == "adagrad") {
    optim::AdagradOptions o(spec.lr);
    o.eps(eps(1e-10)).weight_decay(spec.weight_decay);
    return std::make_unique<optim::Adagrad>(params, o);
  }
  PS_CHECK(spec.optimizer == "rmsprop")
      << "unknown optimizer " << spec.optimizer;
  optim::RMSpropOptions o(spec.lr);
  o.eps(eps(1e-8)).momentum(spec.momentum).weight_decay(spec.weight_decay);
  return std::make_unique<optim::RMSprop>(params, o);
}

void SetLr(torch::optim::Optimizer& optimizer, double lr) {
  // OptimizerOptions::set_lr is virtual in libtorch 1.13 and 2.x alike.
  for (auto& group : optimizer.param_groups())
    group.options().set_lr(lr);
}

Result<LrSchedule> ParseLrSchedule(const std::string& text) {
  LrSchedule s;
  if (text == "constant")
    return s;
  if (text == "cosine") {
    s.kind = LrSchedule::Kind::kCosine;
    return s;
  }
  const size_t colon = text.find(':', 5);
  if (text.rfind("step:", 0) == 0 && colon != std::string::npos &&
      ParseInt(text.substr(5, colon - 5), &s.step_size) && s.step_size >= 1 &&
      ParseDouble(text.substr(colon + 1), &s.gamma) && s.gamma > 0) {
    s.kind = LrSchedule::Kind::kStep;
    return s;
  }
  return InvalidArgument(
      "--lr_schedule '" + text +
      "': expected auto, constant, step:N:GAMMA (N >= 1, GAMMA > 0) or "
      "cosine");
}

Result<LrSchedule> ResolveLrSchedule(const std::string& text,
                                     int64_t versions) {
  if (text != "auto")
    return ParseLrSchedule(text);
  LrSchedule s;
  if (versions >= 1)
    s.kind = LrSchedule::Kind::kCosine;
  return s;
}

Result<LrSchedule> LrScheduleOf(const JobSpec& spec) {
  PS_ASSIGN_OR_RETURN(LrSchedule s, ResolveLrSchedule(spec.lr_schedule,
                                                      ScheduleVersions(spec)));
  s.warmup_versions = VersionsOfSteps(spec, spec.warmup_steps);
  return s;
}

namespace {

double WarmupFactor(const LrSchedule& s, uint64_t version) {
  if (s.warmup_versions <= 0 ||
      version >= static_cast<uint64_t>(s.warmup_versions))
    return 1;
  return static_cast<double>(version + 1) /
         static_cast<double>(s.warmup_versions);
}

double AnnealedLr(const LrSchedule& s, double base_lr, uint64_t version,
                  int64_t total_versions) {
  switch (s.kind) {
    case LrSchedule::Kind::kConstant:
      return base_lr;
    case LrSchedule::Kind::kStep:
      return base_lr *
             std::pow(s.gamma, static_cast<double>(version / s.step_size));
    case LrSchedule::Kind::kCosine: {
      PS_CHECK(total_versions >= 1)
          << "cosine schedule over " << total_versions;
      const double t = static_cast<double>(
          std::min<uint64_t>(version, static_cast<uint64_t>(total_versions)));
      return 0.5 * base_lr *
             (1 + std::cos(M_PI * t / static_cast<double>(total_versions)));
    }
  }
  return base_lr;
}

}  // namespace

double ScheduledLr(const LrSchedule& s, double base_lr, uint64_t version,
                   int64_t total_versions) {
  return AnnealedLr(s, base_lr, version, total_versions) *
         WarmupFactor(s, version);
}

int64_t ScheduleVersions(const JobSpec& spec) {
  if (spec.total_steps > 0)
    return spec.total_steps;
  return VersionsOfSteps(spec, spec.max_steps);
}

int64_t VersionsOfSteps(const JobSpec& spec, int64_t steps) {
  // A version per step of all workers, or per push of any worker.
  if (!RuleTraitsOf(spec).applies_each_push)
    return steps;
  const int64_t workers = std::max(1, spec.num_workers());
  return steps > std::numeric_limits<int64_t>::max() / workers
             ? std::numeric_limits<int64_t>::max()
             : steps * workers;
}

Result<StalenessLr> ParseStalenessLr(const std::string& text) {
  StalenessLr r;
  if (text == "none")
    return r;
  if (text == "inverse") {
    r.kind = StalenessLr::Kind::kInverse;
    return r;
  }
  if (text.rfind("linear:", 0) == 0 && ParseDouble(text.substr(7), &r.alpha) &&
      r.alpha >= 0) {
    r.kind = StalenessLr::Kind::kLinear;
    return r;
  }
  return InvalidArgument(
      "--staleness_lr '" + text +
      "': expected none, inverse or linear:ALPHA (ALPHA >= 0)");
}

double StalenessScale(const StalenessLr& rule, uint64_t staleness) {
  const double s = static_cast<double>(staleness);
  switch (rule.kind) {
    case StalenessLr::Kind::kNone:
      return 1;
    case StalenessLr::Kind::kInverse:
      return 1 / std::max(1.0, s);
    case StalenessLr::Kind::kLinear:
      return 1 / (1 + rule.alpha * s);
  }
  return 1;
}

Result<double> AsyncLrShare(const JobSpec& spec) {
  if (spec.async_lr != "per_sample" && spec.async_lr != "per_push") {
    return InvalidArgument("--async_lr '" + spec.async_lr +
                           "': expected per_sample or per_push");
  }
  if (!RuleTraitsOf(spec).applies_each_push || spec.async_lr == "per_push")
    return 1.0;
  return 1.0 / std::max(1, spec.num_workers());
}

Result<double> AsyncMomentum(const JobSpec& spec) {
  if (spec.async_momentum != "lookahead_or_keep" &&
      spec.async_momentum != "keep" && spec.async_momentum != "auto" &&
      spec.async_momentum != "lookahead") {
    return InvalidArgument("--async_momentum '" + spec.async_momentum +
                           "': expected lookahead_or_keep, keep, auto or "
                           "lookahead");
  }
  if (spec.async_momentum == "lookahead" &&
      RuleTraitsOf(spec).applies_each_push &&
      (spec.optimizer != "sgd" || spec.momentum <= 0 || spec.momentum >= 1 ||
       spec.pull_compression != "none")) {
    return InvalidArgument(
        "--async_momentum lookahead: needs --optimizer sgd, 0 < --momentum < "
        "1 and --pull_compression none");
  }
  if (!RuleTraitsOf(spec).applies_each_push || spec.async_momentum != "auto")
    return spec.momentum;
  const int workers = std::max(1, spec.num_workers());
  return std::max(0.0, 1.0 - workers * (1.0 - spec.momentum));
}

namespace {

bool LookaheadApplies(const JobSpec& spec) {
  return spec.optimizer == "sgd" && spec.momentum > 0 && spec.momentum < 1 &&
         spec.pull_compression == "none" && !IsServerPlacement(spec);
}

}  // namespace

bool UsesLookahead(const JobSpec& spec) {
  if (!RuleTraitsOf(spec).applies_each_push)
    return false;
  return spec.async_momentum == "lookahead" ||
         (spec.async_momentum == "lookahead_or_keep" && LookaheadApplies(spec));
}

JobSpec ServerOptimizerSpec(const JobSpec& spec) {
  JobSpec s = spec;
  auto momentum = AsyncMomentum(spec);
  PS_CHECK(momentum.ok()) << momentum.status().message();
  s.momentum = *momentum;
  if (s.momentum == 0)
    s.nesterov = false;  // libtorch refuses Nesterov without momentum
  return s;
}

}  // namespace pstrain::ps
