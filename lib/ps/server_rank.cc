#include "ps/server_rank.h"

#include <algorithm>
#include <optional>
#include <thread>

#include <asio/io_context.hpp>
#include <torch/torch.h>

#include "data/source.h"
#include "models/compute_threads.h"
#include "models/model_state.h"
#include "models/model_zoo.h"
#include "ps/checkpoint.h"
#include "ps/checkpoint_rotation.h"
#include "ps/job_data.h"
#include "ps/job_module.h"
#include "ps/live_progress.h"
#include "ps/master_client.h"
#include "ps/parameter_server.h"
#include "ps/placement.h"
#include "ps/run_length.h"
#include "ps/server_metrics_feed.h"
#include "ps/server_resume.h"
#include "ps/service.h"
#include "ps/shard_plan.h"
#include "ps/sparse_keys.h"
#include "ps/tensor_codec.h"
#include "trace/timeline.h"
#include "util/check.h"
#include "util/resources.h"

namespace pstrain::ps {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Parameters and buffers: what the servers hold and checkpoints keep.
models::NamedTensors NamedState(models::Model& model) {
  models::NamedTensors tensors;
  for (auto& s : models::ModelState(model))
    tensors.emplace_back(std::move(s.name), std::move(s.value));
  return tensors;
}

// `corpus` set: a language model over its test split; else `test`.
Result<ScoreFn> DefaultScorer(const JobSpec& spec,
                              std::shared_ptr<const data::Source> test,
                              std::shared_ptr<const data::TextCorpus> corpus,
                              const std::vector<torch::Device>& devices) {
  PS_ASSIGN_OR_RETURN(std::shared_ptr<models::Model> model, MakeJobModel(spec));
  if (!devices.empty())
    model->Place(devices);  // --num_gpus: the server's model on its GPUs
  models::EvaluatorOptions options;
  options.loss = LossOf(spec);
  auto evaluator = corpus ? MakeLmEvaluator(model, corpus->test, spec.bptt)
                          : MakeEvaluator(model, std::move(test), options);
  return ScoreFn([evaluator](const models::NamedTensors& state) {
    return evaluator->Score(state);
  });
}

ServiceOptions ServiceOptionsFor(const ServerRankOptions& o,
                                 const std::string& host, int port) {
  ServiceOptions options;
  options.host = o.bind_addr.empty() ? host : o.bind_addr;
  options.port = port;
  options.timeout = o.timeout;
  options.max_frame_bytes = o.max_frame_bytes;
  options.auth_token = o.auth_token;
  options.timeline = o.timeline;
  return options;
}

// A listen event's fields, with the port of /metrics when it is served.
nlohmann::json WithMetricsPort(const ServerRankOptions& o,
                               nlohmann::json fields) {
  if (o.metrics_port >= 0)
    fields["metrics_port"] = o.metrics_port;
  return fields;
}

// --timeline: server `rank`'s keys (its slices) by name, "fc1.weight" or,
// for a slice of a key's rows, "fc1.weight[0:64]".
void NameKeys(trace::Timeline* timeline, const ShardPlan& plan, int rank,
              const std::vector<wire::KeySpec>& model_keys) {
  if (timeline == nullptr)
    return;
  std::vector<std::string> names;
  for (int i : plan.by_server[rank]) {
    const Slice& s = plan.slices[i];
    names.push_back(model_keys[s.key].name);
    if (!s.whole) {
      names.back() += "[" + std::to_string(s.row_begin) + ":" +
                      std::to_string(s.row_end) + "]";
    }
  }
  timeline->SetKeyNames(std::move(names));
}

ShardPlan PlanOrDie(models::Model& model, const JobSpec& spec) {
  auto plan = PlanShardsOf(Fingerprint(model), spec);
  PS_CHECK(plan.ok()) << plan.status().message();  // the spec was validated
  return *plan;
}

nlohmann::json CheckpointMeta(const JobSpec& spec, uint64_t version) {
  return {{"job", ToJson(spec)},
          {"version", version},
          {"step", version},
          {"model", spec.model},
          {"dataset", spec.dataset}};
}

// Rank s in 1..S-1.
Status ServeSlices(const ServerRankOptions& o, report::EventLog* log) {
  MasterClient master(o.timeout, net::ConnectionOptions{o.max_frame_bytes},
                      o.auth_token);
  PS_RETURN_IF_ERROR(master.Connect(o.master_addr, o.master_port));
  PS_ASSIGN_OR_RETURN(JobSpec spec, master.Handshake(o.rank, o.world_size));
  if (IsScriptJob(spec)) {
    PS_ASSIGN_OR_RETURN(spec.module, master.FetchModule(spec.model_sha256));
  }
  models::SetComputeThreads(o.threads);
  torch::manual_seed(spec.seed);
  PS_ASSIGN_OR_RETURN(std::shared_ptr<models::Model> model, MakeJobModel(spec));
  const ShardPlan plan = PlanOrDie(*model, spec);
  ParameterServer server(
      spec, SliceLeaves(plan, o.rank, models::StateValues(*model)),
      SliceRowSparse(plan, o.rank, RowSparseKeys(spec, *model)));
  std::string resume = o.resume;
  if (resume == "auto") {  // the version rank 0 resumed from, if any
    resume = spec.resume_version > 0
                 ? VersionedCheckpointPath(o.checkpoint, spec.resume_version)
                 : "";
  }
  if (!resume.empty())
    PS_RETURN_IF_ERROR(ResumeServer(resume, NamedState(*model), server, o.rank,
                                    spec.num_servers));
  asio::io_context io;
  const ServiceOptions options =
      ServiceOptionsFor(o, master.local_address(), 0);
  Service service(&io, spec, Fingerprint(*model), &server, log, options);
  NameKeys(o.timeline, plan, o.rank, Fingerprint(*model));
  PS_RETURN_IF_ERROR(service.Listen());
  if (o.on_listen)
    o.on_listen(service.port());
  PS_RETURN_IF_ERROR(master.AnnounceServer(options.host + ":" +
                                           std::to_string(service.port())));
  log->Emit("listen",
            WithMetricsPort(o, {{"host", options.host},
                                {"port", service.port()},
                                {"world_size", spec.world_size},
                                {"slices", plan.by_server[o.rank].size()},
                                {"bytes", plan.server_bytes[o.rank]}}));
  auto feed = StartMetricsFeed(o.metrics, spec, &service, &server);
  if (feed)
    service.set_on_version([&feed](uint64_t) { feed->OnVersion(); });
  PS_RETURN_IF_ERROR(service.Run());
  if (feed)
    feed->Publish();
  PS_ASSIGN_OR_RETURN(std::string state,
                      SerializeOptimizerState(server.optimizers()));
  PS_RETURN_IF_ERROR(master.SendShard(
      server.version(), SliceViews(plan, o.rank, models::StateValues(*model)),
      state));
  log->Info("sent " + std::to_string(plan.server_bytes[o.rank]) +
            " bytes of parameters at version " +
            std::to_string(server.version()) + " to rank 0");
  return Status::Ok();
}

// What rank 0 saves and reports at the end: the model that reached the
// target, or the final one, scored with every core.
struct Outcome {
  uint64_t version = 0;
  models::NamedTensors state;
  std::vector<std::string> optimizer_states;
  models::EvalResult result;
  bool target_reached = false;
  double time_to_target = 0;
};

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
    out.time_to_target = Seconds(t->snapshot->made_at - service.started_at());
    return out;
  }
  out.version = server.version();
  out.state = NamedState(model);
  PS_ASSIGN_OR_RETURN(std::string own,
                      SerializeOptimizerState(server.optimizers()));
  out.optimizer_states.push_back(std::move(own));
  for (int s = 1; s < spec.num_servers; ++s) {
    out.optimizer_states.push_back(service.shard_optimizer_state(s));
  }
  models::SetComputeThreads(
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  const auto start = Clock::now();
  PS_ASSIGN_OR_RETURN(out.result, score(out.state));
  nlohmann::json event = {{"version", out.version},
                          {"step", out.version},
                          {"samples", out.result.samples},
                          {"seconds", Seconds(Clock::now() - start)}};
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

Status ServeMaster(const ServerRankOptions& o, report::EventLog* log) {
  JobSpec spec = o.spec;
  PS_ASSIGN_OR_RETURN(const std::vector<torch::Device> devices,
                      ServerDevices(spec.num_gpus));
  PS_RETURN_IF_ERROR(ReadModuleFile(&spec));
  models::SetComputeThreads(o.threads);
  // The test set's shape (a corpus: its vocabulary) builds the model, here
  // and on every other rank.
  std::shared_ptr<const data::Source> test;
  std::shared_ptr<const data::TextCorpus> corpus;
  if (IsTextJob(spec)) {
    PS_ASSIGN_OR_RETURN(corpus, OpenJobCorpus(spec, o.data_dir));
    spec.num_classes = corpus->vocab.size();
  } else {
    PS_ASSIGN_OR_RETURN(
        test, OpenJobSource(spec, o.data_dir, data::Split::kTest, log));
    SetInputShape(test->shape(), &spec);
  }
  CountRunVersions(&spec, o.data_dir, corpus.get(), log);
  torch::manual_seed(spec.seed);
  PS_ASSIGN_OR_RETURN(std::shared_ptr<models::Model> model, MakeJobModel(spec));
  if (test) {
    PS_RETURN_IF_ERROR(CheckModelOnData(
        spec, *model, *test, DataName(spec, o.data_dir, data::Split::kTest)));
  }
  PS_ASSIGN_OR_RETURN(ScoreFn score,
                      o.make_scorer
                          ? o.make_scorer(spec)
                          : DefaultScorer(spec, test, corpus, devices));
  const ShardPlan plan = PlanOrDie(*model, spec);
  ParameterServer server(spec,
                         SliceLeaves(plan, 0, models::StateValues(*model)),
                         SliceRowSparse(plan, 0, RowSparseKeys(spec, *model)));
  const std::string resume =
      ResolveResumePath(o.resume, o.checkpoint, o.keep, log);
  if (!resume.empty()) {
    PS_RETURN_IF_ERROR(
        ResumeServer(resume, NamedState(*model), server, 0, spec.num_servers));
    if (o.resume == "auto")
      spec.resume_version = server.version();
  }
  asio::io_context io;
  const ServiceOptions options =
      ServiceOptionsFor(o, o.master_addr, o.master_port);
  Service service(&io, spec, Fingerprint(*model), &server, log, options);
  NameKeys(o.timeline, plan, 0, Fingerprint(*model));
  if (spec.num_servers > 1)
    service.ExpectServers(&plan, models::StateValues(*model));
  // Destroyed before the service, whose engine its threads post to.
  PS_ASSIGN_OR_RETURN(std::unique_ptr<BatchCompute> batches,
                      StartBatchCompute(spec, models::StateValues(*model),
                                        devices, test.get(), &service));
  if (Status l = service.Listen(); !l.ok()) {
    return InvalidArgument(l.message() + " (--master_port)");
  }
  if (o.on_listen)
    o.on_listen(service.port());
  log->Emit("listen", WithMetricsPort(o, {{"host", options.host},
                                          {"port", service.port()},
                                          {"world_size", spec.world_size},
                                          {"job", ToJson(spec)}}));
  auto feed = StartMetricsFeed(o.metrics, spec, &service, &server);
  std::optional<LiveProgress> live;
  if (o.on_progress) {
    live.emplace(o.on_progress, &service, &server);
    service.set_on_progress([&live](int rank, std::string_view json) {
      live->OnWorker(rank, json);
    });
  }
  ObserverOptions observe;
  observe.eval.steps = static_cast<uint64_t>(spec.eval_interval);
  observe.eval.time =
      std::chrono::milliseconds(static_cast<int64_t>(spec.eval_seconds * 1000));
  observe.checkpoint_every = o.checkpoint_every;
  observe.checkpoint = o.checkpoint;
  observe.keep = o.keep;
  observe.threads = std::max(1, o.threads);
  // A run that stops at a target waits on its evaluations: they keep up
  // with training rather than yield to it.
  observe.low_priority = !HasTarget(spec);
  observe.timeout = o.timeout;
  observe.connection = net::ConnectionOptions{o.max_frame_bytes};
  observe.auth_token = o.auth_token;
  observe.aliases = models::StateAliases(*model);
  observe.timeline = o.timeline;
  Observer observer(observe, spec, &plan, NamedState(*model), score, &service,
                    &io, log, server.version());
  service.set_on_version([&observer, &feed, &live](uint64_t version) {
    observer.OnVersion(version);
    if (feed)
      feed->OnVersion();
    if (live)
      live->OnVersion();
  });
  Status ran = service.Run();
  if (feed)
    feed->Publish();
  observer.Finish();
  PS_RETURN_IF_ERROR(ran);

  PS_ASSIGN_OR_RETURN(Outcome out, FinalOutcome(spec, observer, *model, server,
                                                service, score, log));
  PS_RETURN_IF_ERROR(SaveJobCheckpoint(
      o.checkpoint, WithAliases(out.state, models::StateAliases(*model)),
      out.optimizer_states, CheckpointMeta(spec, out.version)));
  report::ServerStats summary = service.Stats();
  summary.test_accuracy = out.result.accuracy;
  summary.test_loss = out.result.loss;
  if (out.result.perplexity > 0)
    summary.test_perplexity = out.result.perplexity;
  summary.checkpoint = o.checkpoint;
  summary.checkpoint_version = out.version;
  summary.mode = ModeName(spec.mode);
  summary.model = spec.model;
  AddTargetFields(spec, out, observer, &summary, log);
  summary.peak_rss_bytes = PeakRssBytes();
  log->Emit("summary", report::ToJson(summary));
  return Status::Ok();
}

}  // namespace

Status RunServerRank(const ServerRankOptions& options, report::EventLog* log) {
  return options.rank > 0 ? ServeSlices(options, log)
                          : ServeMaster(options, log);
}

}  // namespace pstrain::ps
