#include "ps/rank/server_rank.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <asio/io_context.hpp>
#include <torch/torch.h>

#include "data/source.h"
#include "models/compute_threads.h"
#include "models/model_state.h"
#include "models/model_zoo.h"
#include "ps/engine/handshake.h"
#include "ps/engine/master_desk.h"
#include "ps/engine/snapshot_desk.h"
#include "ps/engine/step_driver.h"
#include "ps/job/job_data.h"
#include "ps/job/job_module.h"
#include "ps/job/run_length.h"
#include "ps/job/shard_plan.h"
#include "ps/job/sparse_keys.h"
#include "ps/job/tensor_codec.h"
#include "ps/rank/checkpoint_rotation.h"
#include "ps/rank/final_outcome.h"
#include "ps/rank/live_progress.h"
#include "ps/rank/master_client.h"
#include "ps/rank/server_beats.h"
#include "ps/rank/server_metrics_feed.h"
#include "ps/rank/server_resume.h"
#include "ps/rank/server_standbys.h"
#include "ps/rank/standby_host.h"
#include "ps/service/placement.h"
#include "ps/service/service.h"
#include "ps/store/checkpoint.h"
#include "ps/store/parameter_server.h"
#include "report/server_stats.h"
#include "trace/timeline.h"
#include "util/check.h"
#include "util/resources.h"

namespace pstrain::ps {

namespace {

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
  options.engine.timeout = o.timeout;
  options.max_frame_bytes = o.max_frame_bytes;
  options.engine.auth_token = o.auth_token;
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

// Serves server `o.rank`'s shard, held in `server`, until the job ends,
// then hands rank 0 its slices and optimizer state: server s > 0, or a
// standby that took s over (`stop` set: no listen event, which is the
// process's own rank's).
Status ServeShard(const ServerRankOptions& o, MasterClient& master,
                  const JobSpec& spec, models::Model& model,
                  const ShardPlan& plan, ParameterServer& server,
                  report::EventLog* log, TakeoverStop* stop = nullptr,
                  const std::vector<int64_t>* applied = nullptr) {
  const bool takeover = stop != nullptr;
  asio::io_context io;
  if (stop) {
    std::lock_guard<std::mutex> lock(stop->mu);
    if (stop->stopped)
      return Status::Ok();
    stop->io = &io;
  }
  const ServiceOptions options =
      ServiceOptionsFor(o, master.local_address(), 0);
  Service service(&io, spec, Fingerprint(model), &server, log, options);
  if (applied)
    PS_RETURN_IF_ERROR(service.engine().steps().set_applied(*applied));
  NameKeys(o.timeline, plan, o.rank, Fingerprint(model));
  PS_RETURN_IF_ERROR(service.Listen());
  if (o.on_listen)
    o.on_listen(service.port());
  const std::string address =
      options.host + ":" + std::to_string(service.port());
  PS_RETURN_IF_ERROR(master.AnnounceServer(address));
  if (takeover) {
    log->Info("serves rank " + std::to_string(o.rank) + "'s shard at " +
              address + " from version " + std::to_string(server.version()));
  } else {
    log->Emit("listen",
              WithMetricsPort(o, {{"host", options.host},
                                  {"port", service.port()},
                                  {"pid", getpid()},
                                  {"world_size", spec.world_size},
                                  {"slices", plan.by_server[o.rank].size()},
                                  {"bytes", plan.server_bytes[o.rank]}}));
  }
  auto feed = StartMetricsFeed(o.metrics, spec, &service, &server);
  if (feed)
    service.engine().snapshots().set_on_version(
        [&feed](uint64_t) { feed->OnVersion(); });
  // Rank 0 hears this server while it serves, and this server hears rank
  // 0's word: once fenced (or once rank 0 is gone) it serves no more.
  auto beats = std::make_unique<ServerBeats>(
      spec.dead_after, &master, [&io](const Status&) { io.stop(); });
  PS_RETURN_IF_ERROR(service.Run());
  if (feed)
    feed->Publish();
  if (stop) {
    std::lock_guard<std::mutex> lock(stop->mu);
    stop->io = nullptr;
    if (stop->stopped)
      return Unavailable("rank 0's run ended first");
  }
  PS_RETURN_IF_ERROR(beats->Serving(o.rank));
  PS_ASSIGN_OR_RETURN(std::string state,
                      SerializeOptimizerState(server.optimizers()));
  PS_RETURN_IF_ERROR(beats->Serving(o.rank));
  beats.reset();  // the master client is ours again
  PS_RETURN_IF_ERROR(master.SendShard(
      server.version(), SliceViews(plan, o.rank, models::StateValues(model)),
      state));
  log->Info("sent " + std::to_string(plan.server_bytes[o.rank]) +
            " bytes of parameters at version " +
            std::to_string(server.version()) + " to rank 0");
  return Status::Ok();
}

// --replicas: what a standby that takes a shard over serves it with.
ServeTakeover TakeoverServer(const ServerRankOptions& o,
                             report::EventLog* log) {
  return [o, log](const TakenShard& shard) {
    ServerRankOptions taken = o;
    taken.rank = shard.rank;
    taken.metrics = nullptr;
    taken.metrics_port = -1;
    taken.timeline = nullptr;
    taken.on_listen = nullptr;
    Status served =
        ServeShard(taken, *shard.master, *shard.job, *shard.model, *shard.plan,
                   *shard.server, log, shard.stop, shard.applied);
    if (!served.ok() && o.rank > 0 && shard.master->ended())
      ExitFenced(served, log);
    return served;
  };
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
  // After this rank's own model is made: the standbys' draw from the same
  // generator, and a standby's first copy overwrites what it drew.
  auto standbys = HostStandbys(o, spec, TakeoverServer(o, log), log);
  Status served = ServeShard(o, master, spec, *model, plan, server, log);
  if (!served.ok() && master.ended())
    ExitFenced(served, log);  // not waiting for its standbys' threads
  return served;
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
    service.engine().master().ExpectServers(&plan, models::StateValues(*model));
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
                                          {"pid", getpid()},
                                          {"world_size", spec.world_size},
                                          {"job", ToJson(spec)}}));
  auto feed = StartMetricsFeed(o.metrics, spec, &service, &server);
  std::optional<LiveProgress> live;
  if (o.on_progress) {
    live.emplace(o.on_progress, &service, &server);
    service.engine().handshake().set_on_progress(
        [&live](int rank, std::string_view json) {
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
  service.engine().snapshots().set_on_version(
      [&observer, &feed, &live](uint64_t version) {
        observer.OnVersion(version);
        if (feed)
          feed->OnVersion();
        if (live)
          live->OnVersion();
      });
  // Rank 0's standbys reach it where it listens (--master_port 0: the
  // kernel picked the port).
  ServerRankOptions here = o;
  here.master_addr = options.host;
  here.master_port = service.port();
  auto standbys = HostStandbys(here, spec, TakeoverServer(here, log), log);
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
  if (options.rank > 0)
    return options.rejoin
               ? ServeRejoin(options, TakeoverServer(options, log), log)
               : ServeSlices(options, log);
  if (options.rejoin)
    return InvalidArgument("--rejoin: rank 0 cannot rejoin; it is the master");
  return ServeMaster(options, log);
}

}  // namespace pstrain::ps
