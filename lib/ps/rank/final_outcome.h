#pragma once
// What rank 0 saves and reports at the end of a run (ps/rank/server_rank.h):
// the model that reached --target_accuracy or --target_perplexity, as the
// observer scored it, or else the final one, scored here with every core;
// and the summary's target fields. Called on rank 0's main thread once its
// Service has ended.

#include <cstdint>
#include <string>
#include <vector>

#include "models/evaluator.h"
#include "models/model.h"
#include "ps/job/job_spec.h"
#include "ps/rank/observer.h"
#include "ps/service/service.h"
#include "ps/store/parameter_server.h"
#include "report/event_log.h"
#include "report/server_stats.h"
#include "util/result.h"

namespace pstrain::ps {

struct Outcome {
  uint64_t version = 0;
  models::NamedTensors state;  // the whole model's, by name
  /// Each server's SerializeOptimizerState bytes, by server rank.
  std::vector<std::string> optimizer_states;
  models::EvalResult result;
  bool target_reached = false;
  double time_to_target = 0;  // seconds from the first registration
};

/// The observer's target snapshot when it reached the target; otherwise
/// `model` (rank 0's, holding every server's final slices) at `server`'s
/// version with each server's optimizer state, scored by `score` (an
/// `eval` event). Errors: the optimizer state's or the scoring's.
Result<Outcome> FinalOutcome(const JobSpec& spec, const Observer& observer,
                             models::Model& model,
                             const ParameterServer& server,
                             const Service& service, const ScoreFn& score,
                             report::EventLog* log);

/// With a target: its fields in `summary`, and a line with the best
/// accuracy when it was not reached.
void AddTargetFields(const JobSpec& spec, const Outcome& out,
                     const Observer& observer, report::ServerStats* summary,
                     report::EventLog* log);

}  // namespace pstrain::ps
