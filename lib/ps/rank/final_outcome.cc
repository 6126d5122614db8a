#include "ps/rank/final_outcome.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "models/compute_threads.h"
#include "models/model_state.h"
#include "ps/engine/master_desk.h"
#include "ps/engine/membership.h"
#include "ps/job/job_data.h"
#include "ps/store/checkpoint.h"
#include "ps/store/parameter_server.h"
#include "ps/store/snapshot.h"
#include "report/server_stats.h"

namespace pstrain::ps {

namespace {

using Clock = std::chrono::steady_clock;

double SecondsOf(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

Result<Outcome> FinalOutcome(const JobSpec& spec, const Observer& observer,
                             models::Model& model,
                             const ParameterServer& server,
                             const Service& service, const ScoreFn& score,
                             report::EventLog* log) {
  Outcome out;
  if (const auto& t = observer.target()) {
    out.version = t->version;
    out.state = t->snapshot->state;
    out.optimizer_states = t->snapshot->optimizer_states;
    out.result = t->result;
    out.target_reached = true;
    out.time_to_target = SecondsOf(t->snapshot->made_at -
                                   service.engine().members().first_register());
    return out;
  }
  out.version = server.version();
  for (auto& s : models::ModelState(model))
    out.state.emplace_back(std::move(s.name), std::move(s.value));
  PS_ASSIGN_OR_RETURN(std::string own,
                      SerializeOptimizerState(server.optimizers()));
  out.optimizer_states.push_back(std::move(own));
  for (int s = 1; s < spec.num_servers; ++s) {
    out.optimizer_states.push_back(
        service.engine().master().roster().optimizer_state(s));
  }
  models::SetComputeThreads(
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  const auto start = Clock::now();
  PS_ASSIGN_OR_RETURN(out.result, score(out.state));
  nlohmann::json event = {{"version", out.version},
                          {"step", out.version},
                          {"samples", out.result.samples},
                          {"seconds", SecondsOf(Clock::now() - start)}};
  event.update(EvalScores(out.result));
  log->Emit("eval", event);
  if (ReachesTarget(spec, out.result)) {
    out.target_reached = true;
    out.time_to_target = service.Stats().wall_seconds;
  }
  return out;
}

void AddTargetFields(const JobSpec& spec, const Outcome& out,
                     const Observer& observer, report::ServerStats* summary,
                     report::EventLog* log) {
  if (!HasTarget(spec))
    return;
  if (spec.target_accuracy > 0)
    summary->target_accuracy = spec.target_accuracy;
  if (spec.target_perplexity > 0)
    summary->target_perplexity = spec.target_perplexity;
  summary->target_reached = out.target_reached;
  if (out.target_reached) {
    summary->time_to_target_seconds = out.time_to_target;
    summary->steps_to_target = out.version;
  } else {
    const double best = std::max(observer.best_accuracy(), out.result.accuracy);
    const std::string target =
        spec.target_accuracy > 0
            ? "--target_accuracy " + std::to_string(spec.target_accuracy)
            : "--target_perplexity " + std::to_string(spec.target_perplexity);
    log->Info(target + " not reached; the best test accuracy was " +
              std::to_string(best));
  }
}

}  // namespace pstrain::ps
