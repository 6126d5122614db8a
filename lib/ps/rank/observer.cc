#include "ps/rank/observer.h"

#include <algorithm>
#include <thread>

#include <asio/post.hpp>
#include <torch/torch.h>

#include "models/compute_threads.h"
#include "ps/engine/master_desk.h"
#include "ps/engine/step_driver.h"
#include "ps/job/job_data.h"
#include "ps/job/rule_traits.h"
#include "ps/job/shard_plan.h"
#include "ps/rank/checkpoint_rotation.h"
#include "ps/store/checkpoint.h"
#include "ps/store/snapshot.h"
#include "trace/timeline.h"

namespace pstrain::ps {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

Observer::Observer(ObserverOptions options, const JobSpec& spec,
                   const ShardPlan* plan, models::NamedTensors named_params,
                   ScoreFn score, Service* service, asio::io_context* io,
                   report::EventLog* log, uint64_t start)
    : options_(std::move(options)),
      spec_(spec),
      plan_(plan),
      named_params_(std::move(named_params)),
      score_(std::move(score)),
      service_(service),
      io_(io),
      log_(log),
      eval_schedule_(options_.eval, start, Clock::now()),
      checkpoint_schedule_(options_.checkpoint_every, start, Clock::now()) {
  clients_.resize(spec_.num_servers);
  if (!options_.eval.empty() || !options_.checkpoint_every.empty()) {
    gather_thread_ = std::thread([this] { GatherLoop(); });
    work_thread_ = std::thread([this] { WorkLoop(); });
  }
}

Observer::~Observer() {
  Finish();
}

void Observer::OnVersion(uint64_t version) {
  if (!gather_thread_.joinable() || service_->engine().steps().stopped())
    return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (under_way_ >= kMaxPlans)
      return;
  }
  const auto now = Clock::now();
  uint64_t lead = 0;
  if (spec_.num_servers > 1)
    lead = RuleTraitsOf(spec_).snapshot_lead;
  const auto eval = eval_schedule_.Due(version, lead, now);
  const auto checkpoint = checkpoint_schedule_.Due(version, lead, now);
  if (!eval && !checkpoint)
    return;
  auto plan = std::make_shared<Plan>();
  plan->version =
      std::min(eval.value_or(UINT64_MAX), checkpoint.value_or(UINT64_MAX));
  plan->eval = eval.has_value();
  plan->checkpoint = checkpoint.has_value();
  plan->optimizer_states = plan->checkpoint || HasTarget(spec_);
  plan->addresses.resize(spec_.num_servers);
  for (int s = 1; s < spec_.num_servers; ++s)
    plan->addresses[s] = service_->engine().master().roster().address(s);
  if (plan->eval)
    eval_schedule_.Done(plan->version, now);
  if (plan->checkpoint)
    checkpoint_schedule_.Done(plan->version, now);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++under_way_;
    to_gather_.push_back(plan);
  }
  cv_.notify_all();
  // May answer at once, so not under mu_.
  service_->RequestSnapshot(
      plan->version, plan->optimizer_states,
      [this, plan](std::shared_ptr<const Snapshot> snapshot) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          plan->local = std::move(snapshot);
          plan->local_in = true;
        }
        cv_.notify_all();
      });
}

void Observer::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (gather_thread_.joinable())
    gather_thread_.join();
  if (work_thread_.joinable())
    work_thread_.join();
}

// Waits for the other servers' answers and rank 0's own snapshot, and
// saves the checkpoints.
void Observer::GatherLoop() {
  if (options_.timeline)
    options_.timeline->NameThread("snapshots");
  for (;;) {
    std::shared_ptr<Plan> plan;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !to_gather_.empty() || stopping_; });
      if (to_gather_.empty())
        break;
      plan = to_gather_.front();
      to_gather_.pop_front();
    }
    trace::Scope gather(options_.timeline, {"gather"});
    std::shared_ptr<WholeSnapshot> whole = Gather(*plan);
    gather.End();
    // Saving is mostly I/O and must not starve behind training: here, at
    // normal priority, rather than with the scoring.
    if (whole && plan->checkpoint)
      SaveCheckpoint(*whole);
    if (whole && !plan->eval)
      whole = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (whole) {
        to_work_.push_back({plan, whole});
      } else {
        --under_way_;
      }
    }
    cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    gathered_ = true;
  }
  cv_.notify_all();
}

// Scores in order, on cores training leaves idle; once training has ended,
// with every core.
void Observer::WorkLoop() {
  if (options_.timeline)
    options_.timeline->NameThread("evaluation");
  if (options_.low_priority)
    models::LowerThisThreadsPriority();
  models::SetComputeThreads(options_.threads);
  bool all_cores = false;
  for (;;) {
    Work work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !to_work_.empty() || gathered_; });
      if (to_work_.empty())
        return;
      work = std::move(to_work_.front());
      to_work_.pop_front();
      if (stopping_ && !all_cores) {
        all_cores = true;
        models::SetComputeThreads(static_cast<int>(
            std::max(1u, std::thread::hardware_concurrency())));
      }
    }
    if (!target_)
      Evaluate(
          work.whole);  // after the target, the run's model is that version
    std::lock_guard<std::mutex> lock(mu_);
    --under_way_;
  }
}

// The other servers' slices first (each waits for its version), then rank
// 0's own, copied when it made the version.
std::shared_ptr<WholeSnapshot> Observer::Gather(Plan& plan) {
  auto whole = std::make_shared<WholeSnapshot>();
  std::vector<at::Tensor> tensors;
  for (const auto& [name, p] : named_params_) {
    tensors.push_back(torch::empty_like(p, at::MemoryFormat::Contiguous));
    whole->state.emplace_back(name, tensors.back());
  }
  whole->optimizer_states.resize(spec_.num_servers);
  std::vector<uint64_t> versions(spec_.num_servers, 0);
  Status fetched = Status::Ok();
  for (int s = 1; s < spec_.num_servers && fetched.ok(); ++s) {
    fetched = FetchRemote(plan, s, whole.get(), &versions[s]);
  }
  std::shared_ptr<const Snapshot> local = AwaitLocal(plan);
  if (!fetched.ok() || !local) {
    if (!fetched.ok()) {
      log_->Info("no snapshot of version " + std::to_string(plan.version) +
                 ": " + fetched.message());
    }
    return nullptr;
  }
  versions[0] = local->version;
  if (RuleTraitsOf(spec_).snapshot_versions_agree &&
      std::any_of(versions.begin(), versions.end(),
                  [&](uint64_t v) { return v != versions[0]; })) {
    std::string seen;
    for (uint64_t v : versions)
      seen += (seen.empty() ? "" : ", ") + std::to_string(v);
    log_->Info("snapshot of version " + std::to_string(plan.version) +
               " skipped: the servers answered versions " + seen);
    return nullptr;
  }
  torch::NoGradGuard no_grad;
  const std::vector<at::Tensor> own = SliceViews(*plan_, 0, tensors);
  for (size_t k = 0; k < own.size(); ++k) {
    at::Tensor dst = own[k];
    dst.copy_(local->params[k]);
  }
  whole->version = local->version;
  whole->made_at = local->made_at;
  whole->optimizer_states[0] = local->optimizer_state;
  return whole;
}

Status Observer::FetchRemote(const Plan& plan, int s, WholeSnapshot* whole,
                             uint64_t* version) {
  auto& client = clients_[s];
  if (!client || !client->connected()) {
    client = std::make_unique<SnapshotClient>(
        s, spec_.world_size, options_.timeout, options_.connection,
        options_.auth_token);
    Status c = client->Connect(plan.addresses[s]);
    if (!c.ok()) {
      client.reset();
      return c.WithContext("rank " + std::to_string(s));
    }
  }
  std::vector<at::Tensor> tensors;
  for (const auto& [name, t] : whole->state)
    tensors.push_back(t);
  auto v = client->Fetch(
      plan.version, SliceViews(*plan_, s, tensors),
      plan.optimizer_states ? &whole->optimizer_states[s] : nullptr);
  if (!v.ok()) {
    client.reset();
    return v.status().WithContext("rank " + std::to_string(s));
  }
  *version = *v;
  return Status::Ok();
}

std::shared_ptr<const Snapshot> Observer::AwaitLocal(Plan& plan) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&plan] { return plan.local_in; });
  return plan.local;
}

void Observer::Evaluate(const std::shared_ptr<WholeSnapshot>& whole) {
  const int64_t v = static_cast<int64_t>(whole->version);
  trace::Scope span(options_.timeline, {"evaluate", -1, v, v});
  const auto start = Clock::now();
  auto r = score_(whole->state);
  if (!r.ok()) {
    log_->Info("evaluation of version " + std::to_string(whole->version) +
               " failed: " + r.status().message());
    return;
  }
  nlohmann::json event = {{"version", whole->version},
                          {"step", whole->version},
                          {"samples", r->samples},
                          {"seconds", Seconds(Clock::now() - start)}};
  event.update(EvalScores(*r));
  log_->Emit("eval", event);
  best_accuracy_ = std::max(best_accuracy_, r->accuracy);
  if (!ReachesTarget(spec_, *r) || target_)
    return;
  target_ = TargetReached{whole->version, *r, whole};
  log_->Info("test accuracy " + std::to_string(r->accuracy) +
             (r->perplexity > 0
                  ? ", perplexity " + std::to_string(r->perplexity)
                  : std::string()) +
             " at version " + std::to_string(whole->version) +
             " reached the target; stopping");
  asio::post(*io_, [this] { service_->StopTraining(); });
}

void Observer::SaveCheckpoint(const WholeSnapshot& whole) {
  const int64_t v = static_cast<int64_t>(whole.version);
  trace::Scope span(options_.timeline, {"checkpoint", -1, v, v});
  const std::string path =
      VersionedCheckpointPath(options_.checkpoint, whole.version);
  const nlohmann::json meta = {{"job", ToJson(spec_)},
                               {"version", whole.version},
                               {"step", whole.version},
                               {"model", spec_.model},
                               {"dataset", spec_.dataset}};
  Status s = SaveJobCheckpoint(path, WithAliases(whole.state, options_.aliases),
                               whole.optimizer_states, meta);
  if (s.ok())
    s = RemoveOldCheckpoints(options_.checkpoint, options_.keep);
  if (!s.ok()) {
    log_->Info("checkpoint of version " + std::to_string(whole.version) +
               " failed: " + s.message());
  }
}

}  // namespace pstrain::ps
