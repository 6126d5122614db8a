#include "ps/rank/master_rank.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

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
#include "ps/rank/final_outcome.h"
#include "ps/rank/live_progress.h"
#include "ps/rank/rank_setup.h"
#include "ps/rank/server_metrics_feed.h"
#include "ps/rank/server_resume.h"
#include "ps/rank/server_standbys.h"
#include "ps/rank/succession.h"
#include "ps/service/placement.h"
#include "ps/service/service.h"
#include "ps/store/checkpoint.h"
#include "ps/store/parameter_server.h"
#include "rdzv/master_key.h"
#include "report/server_stats.h"
#include "util/resources.h"

namespace pstrain::ps {

namespace {

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

nlohmann::json CheckpointMeta(const JobSpec& spec, uint64_t version) {
  return {{"job", ToJson(spec)},
          {"version", version},
          {"step", version},
          {"model", spec.model},
          {"dataset", spec.dataset}};
}

// What a master runs with: its job, its shard of `model` in `server`, and
// what scores and feeds the model.
struct MasterParts {
  JobSpec spec;
  models::Model* model = nullptr;
  const ShardPlan* plan = nullptr;
  ParameterServer* server = nullptr;
  ScoreFn score;
  std::vector<torch::Device> devices;
  const data::Source* test = nullptr;
  // A successor's: the pushes its copy of rank 0's shard had applied.
  const std::vector<int64_t>* applied = nullptr;
};

ObserverOptions ObserveOptions(const ServerRankOptions& o, const JobSpec& spec,
                               models::Model& model) {
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
  observe.aliases = models::StateAliases(model);
  observe.timeline = o.timeline;
  return observe;
}

// The final model: merged, saved, scored, and the summary.
Status EndJob(const ServerRankOptions& o, const MasterParts& m,
              const Observer& observer, Service& service,
              report::EventLog* log) {
  const JobSpec& spec = m.spec;
  PS_ASSIGN_OR_RETURN(
      Outcome out,
      FinalOutcome(spec, observer, *m.model, *m.server, service, m.score, log));
  PS_RETURN_IF_ERROR(SaveJobCheckpoint(
      o.checkpoint, WithAliases(out.state, models::StateAliases(*m.model)),
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

// Serves rank 0's shard and the master's roles at o.master_addr:
// o.master_port until the job ends, then ends it (EndJob).
Status RunMaster(const ServerRankOptions& o, MasterParts& m,
                 report::EventLog* log) {
  const JobSpec& spec = m.spec;
  const bool successor = m.applied != nullptr;
  asio::io_context io;
  const ServiceOptions options =
      ServiceOptionsFor(o, o.master_addr, o.master_port);
  Service service(&io, spec, Fingerprint(*m.model), m.server, log, options);
  if (successor)
    PS_RETURN_IF_ERROR(service.engine().steps().set_applied(*m.applied));
  NameKeys(o.timeline, *m.plan, 0, Fingerprint(*m.model));
  if (spec.num_servers > 1) {
    service.engine().master().ExpectServers(m.plan,
                                            models::StateValues(*m.model));
    if (successor)
      service.engine().master().Succeed();  // the servers come back to it
  }
  // Destroyed before the service, whose engine its threads post to.
  PS_ASSIGN_OR_RETURN(std::unique_ptr<BatchCompute> batches,
                      StartBatchCompute(spec, models::StateValues(*m.model),
                                        m.devices, m.test, &service));
  if (Status l = service.Listen(); !l.ok()) {
    return InvalidArgument(l.message() + " (--master_port)");
  }
  if (o.on_listen)
    o.on_listen(service.port());
  if (o.succession) {
    PS_RETURN_IF_ERROR(o.succession->Announce(options.host + ":" +
                                              std::to_string(service.port())));
  }
  if (successor) {
    log->Info("is the master now: serves rank 0's shard from version " +
              std::to_string(m.server->version()) + " at " + options.host +
              ":" + std::to_string(service.port()));
  } else {
    log->Emit("listen", WithMetricsPort(o, {{"host", options.host},
                                            {"port", service.port()},
                                            {"pid", getpid()},
                                            {"world_size", spec.world_size},
                                            {"job", ToJson(spec)}}));
  }
  auto feed = StartMetricsFeed(o.metrics, spec, &service, m.server);
  std::optional<LiveProgress> live;
  if (o.on_progress) {
    live.emplace(o.on_progress, &service, m.server);
    service.engine().handshake().set_on_progress(
        [&live](int rank, std::string_view json) {
          live->OnWorker(rank, json);
        });
  }
  Observer observer(ObserveOptions(o, spec, *m.model), spec, m.plan,
                    NamedState(*m.model), m.score, &service, &io, log,
                    m.server->version());
  service.engine().snapshots().set_on_version(
      [&observer, &feed, &live](uint64_t version) {
        observer.OnVersion(version);
        if (feed)
          feed->OnVersion();
        if (live)
          live->OnVersion();
      });
  // Rank 0's standbys reach it where it listens (--master_port 0: the
  // kernel picked the port). A successor keeps those of its own rank.
  ServerRankOptions here = o;
  here.master_addr = options.host;
  here.master_port = service.port();
  std::unique_ptr<StandbyHost> standbys;
  if (!successor)
    standbys = HostStandbys(here, spec, TakeoverServer(here, log), log);
  Status ran = service.Run();
  if (feed)
    feed->Publish();
  observer.Finish();
  PS_RETURN_IF_ERROR(ran);
  return EndJob(o, m, observer, service, log);
}

// The test set (a corpus: its split) and what scores the model on it.
Status OpenScorer(const ServerRankOptions& o, MasterParts* m,
                  std::shared_ptr<const data::Source> test,
                  std::shared_ptr<const data::TextCorpus> corpus) {
  PS_ASSIGN_OR_RETURN(m->score,
                      o.make_scorer
                          ? o.make_scorer(m->spec)
                          : DefaultScorer(m->spec, test, corpus, m->devices));
  m->test = test.get();
  return Status::Ok();
}

}  // namespace

Status ServeMaster(const ServerRankOptions& o, report::EventLog* log) {
  MasterParts m;
  m.spec = o.spec;
  JobSpec& spec = m.spec;
  // Before anything is served: another master of the job may hold it.
  if (o.succession)
    PS_RETURN_IF_ERROR(o.succession->Lead(rdzv::LeaseFor(spec.dead_after)));
  PS_ASSIGN_OR_RETURN(m.devices, ServerDevices(spec.num_gpus));
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
  PS_RETURN_IF_ERROR(OpenScorer(o, &m, test, corpus));
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
  m.model = model.get();
  m.plan = &plan;
  m.server = &server;
  return RunMaster(o, m, log);
}

Status SucceedMaster(const ServerRankOptions& o, const TakenShard& shard,
                     report::EventLog* log) {
  MasterParts m;
  m.spec = *shard.job;
  PS_ASSIGN_OR_RETURN(m.devices, ServerDevices(m.spec.num_gpus));
  std::shared_ptr<const data::Source> test;
  std::shared_ptr<const data::TextCorpus> corpus;
  if (IsTextJob(m.spec)) {
    PS_ASSIGN_OR_RETURN(corpus, OpenJobCorpus(m.spec, o.data_dir));
  } else {
    PS_ASSIGN_OR_RETURN(
        test, OpenJobSource(m.spec, o.data_dir, data::Split::kTest, log));
  }
  PS_RETURN_IF_ERROR(OpenScorer(o, &m, test, corpus));
  m.model = shard.model;
  m.plan = shard.plan;
  m.server = shard.server;
  m.applied = shard.applied;
  ServerRankOptions master = o;
  master.rank = 0;
  master.metrics = nullptr;
  master.metrics_port = -1;
  master.timeline = nullptr;
  master.on_listen = nullptr;
  master.on_progress = nullptr;
  // Where the arbiter's master listens on a host of its own (etcd): this
  // host's address, at a port the kernel picks, told through the arbiter.
  if (std::optional<std::string> host = o.succession->ListenHost()) {
    master.master_addr = *host;
    master.master_port = 0;
  }
  return RunMaster(master, m, log);
}

}  // namespace pstrain::ps
