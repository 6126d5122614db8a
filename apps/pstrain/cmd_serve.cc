// pstrain serve: rank 0 (the master and parameter server) decides the job,
// serves the workers, then saves and scores the model. With --num_servers
// S > 1, ranks 1..S-1 serve their slices of the model (ps/shard_plan.h):
// they take the job from rank 0, tell it where they listen, and send it
// their slices at the end.

#include <chrono>
#include <optional>

#include <asio/io_context.hpp>
#include <torch/torch.h>

#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"
#include "data/dataset.h"
#include "models/evaluator.h"
#include "models/model_zoo.h"
#include "ps/checkpoint.h"
#include "ps/checkpoint_rotation.h"
#include "ps/parameter_server.h"
#include "ps/service.h"
#include "ps/shard_plan.h"
#include "ps/tensor_codec.h"
#include "util/check.h"
#include "util/resources.h"
#include "worker/ps_client.h"

namespace pstrain::apps {

namespace {

struct ServeFlags {
  WorldFlags world;
  JobFlags job;
  LocalFlags local;
  std::string checkpoint = "pstrain-model.pt";
  std::string resume;  // "" = start from the seed's initial model
  std::string bind_addr;  // "" = master_addr's interface
  std::string checkpoint_every;  // "" = only at the end
  int keep = 3;
};

Result<data::Dataset> LoadTestSet(const ps::JobSpec& spec, const std::string& dir) {
  auto ds = data::LoadDataset(
      spec.dataset, dir,
      data::Split::kTest);
  if (!ds.ok() && ds.status().code() == StatusCode::kCorruption) {
    return InvalidArgument(ds.status().message());
  }
  return ds;
}

nlohmann::json EvalFields(const models::EvalResult& r, uint64_t version) {
  return {{"step", version},
          {"test_accuracy", r.accuracy},
          {"test_loss", r.loss},
          {"samples", r.samples}};
}

ps::NamedTensors NamedParameters(models::Model& model) {
  ps::NamedTensors tensors;
  for (const auto& item : model.named_parameters()) {
    tensors.emplace_back(item.key(), item.value());
  }
  return tensors;
}

// With several servers rank 0 saves the merged parameters, and every server
// its own slices' optimizer state beside them (SaveOptimizerStateOf).
Status SaveModel(const std::string& path, models::Model& model,
                 ps::ParameterServer& server, const ps::JobSpec& spec) {
  const uint64_t version = server.version();
  nlohmann::json meta = {{"job", ps::ToJson(spec)},
                         {"version", version},
                         {"step", version},
                         {"model", spec.model},
                         {"dataset", spec.dataset}};
  PS_RETURN_IF_ERROR(ps::SaveCheckpoint(path, NamedParameters(model), meta));
  return ps::SaveOptimizerState(path, server.optimizers(), 0, spec.num_servers);
}

// --resume: the saved parameters, optimizer state and version. Any mismatch
// with this run's model or optimizer is bad input (exit 2).
// Every server of several reads the merged parameters (its slices are
// views of them) and its own optimizer state.
Status Resume(const std::string& path, models::Model& model,
              ps::ParameterServer& server, int rank, int num_servers) {
  auto tensors = ps::LoadCheckpointTensors(path);
  auto meta = ps::LoadCheckpointMeta(path);
  Status s = tensors.ok() ? meta.status() : tensors.status();
  if (s.ok()) s = ps::LoadIntoParameters(*tensors, NamedParameters(model), path);
  if (s.ok()) s = ps::LoadOptimizerState(path, server.optimizers(), rank, num_servers);
  if (s.ok() && !(meta->contains("version") && (*meta)["version"].is_number_unsigned())) {
    s = InvalidArgument(ps::CheckpointMetaPath(path) + " has no \"version\"");
  }
  if (!s.ok()) return InvalidArgument("--resume: " + s.message());
  server.set_version((*meta)["version"].get<uint64_t>());
  return Status::Ok();
}

// Where and how a server listens: `host` by default (--bind_addr wins).
ps::ServiceOptions ServiceOptionsFor(const ServeFlags& f, const std::string& host,
                                    int port, const std::string& token) {
  ps::ServiceOptions options;
  options.host = f.bind_addr.empty() ? host : f.bind_addr;
  options.port = port;
  options.timeout = f.local.timeout();
  options.max_frame_bytes = f.local.max_frame_bytes;
  options.auth_token = token;
  return options;
}

ps::ShardPlan PlanOrDie(models::Model& model, const ps::JobSpec& spec) {
  auto plan = ps::PlanShards(ps::Fingerprint(model), spec.num_servers, spec.slice_bytes);
  PS_CHECK(plan.ok()) << plan.status().message();  // the spec was validated
  return *plan;
}

// Rank s in 1..S-1: serves its slices on a port the kernel picks, on the
// interface that reaches rank 0, and hands the slices to rank 0 at the end.
int ServeSlices(ServeFlags& f, report::EventLog& log) {
  const auto& w = f.world.world;
  auto token = AuthToken(f.local);
  if (!token.ok()) return Fail(log, token.status());
  worker::PsClient master(f.local.timeout(), net::ConnectionOptions{f.local.max_frame_bytes}, 0);
  master.set_auth_token(*token);
  Status s = master.Connect(w.master_addr, w.master_port);
  if (!s.ok()) return Fail(log, s);
  auto spec = master.Handshake(w.rank, w.world_size, wire::Role::kServer);
  if (!spec.ok()) return Fail(log, spec.status());
  SetThreads(f.local.threads);
  torch::manual_seed(spec->seed);
  auto model = models::MakeModel(spec->model);
  if (!model.ok()) return Fail(log, model.status());
  const ps::ShardPlan plan = PlanOrDie(**model, *spec);
  ps::ParameterServer server(*spec, ps::SliceLeaves(plan, w.rank, (*model)->parameters()));
  if (!f.resume.empty()) {
    Status r = Resume(f.resume, **model, server, w.rank, spec->num_servers);
    if (!r.ok()) return Fail(log, r);
  }
  asio::io_context io;
  const ps::ServiceOptions options = ServiceOptionsFor(f, master.local_address(), 0, *token);
  ps::Service service(&io, *spec, ps::Fingerprint(**model), &server, &log, options);
  if (Status l = service.Listen(); !l.ok()) return Fail(log, l);
  const std::string address = options.host + ":" + std::to_string(service.port());
  if (Status a = master.AnnounceServer(address); !a.ok()) return Fail(log, a);
  log.Emit("listen", {{"host", options.host}, {"port", service.port()},
                      {"world_size", spec->world_size},
                      {"slices", plan.by_server[w.rank].size()},
                      {"bytes", plan.server_bytes[w.rank]}});
  if (Status r = service.Run(); !r.ok()) return Fail(log, r);
  Status sent = master.SendShard(server.version(),
                                 ps::SliceViews(plan, w.rank, (*model)->parameters()));
  if (!sent.ok()) return Fail(log, sent);
  Status saved = ps::SaveOptimizerState(f.checkpoint, server.optimizers(), w.rank,
                                        spec->num_servers);
  if (!saved.ok()) return Fail(log, saved);
  log.Info("sent " + std::to_string(plan.server_bytes[w.rank]) +
           " bytes of parameters at version " + std::to_string(server.version()) +
           " to rank 0");
  return 0;
}

int Serve(ServeFlags& f) {
  Status s = ResolveWorld(&f.world, "server");
  if (s.ok()) s = FinishJobSpec(&f.job, f.world.world.world_size, f.world.world.num_servers);
  auto log = MakeEventLog(f.local, s.ok() ? f.world.world.rank : 0, "server");
  if (!s.ok()) return Fail(*log, s);
  // Rank 0 holds the other servers' slices only at the end.
  if (f.world.world.num_servers > 1 && f.resume == "auto") {
    return Fail(*log, InvalidArgument("--resume auto: only with --num_servers 1"));
  }
  if (f.world.world.num_servers > 1 && !f.checkpoint_every.empty()) {
    return Fail(*log, InvalidArgument("--checkpoint_every: only with --num_servers 1"));
  }
  if (f.world.world.rank > 0) return ServeSlices(f, *log);
  const ps::JobSpec& spec = f.job.spec;
  SetThreads(f.local.threads);
  torch::manual_seed(spec.seed);
  auto model = models::MakeModel(spec.model);
  if (!model.ok()) return Fail(*log, model.status());
  auto test = LoadTestSet(spec, f.local.data_dir);
  if (!test.ok()) return Fail(*log, test.status());

  const ps::ShardPlan plan = PlanOrDie(**model, spec);
  ps::ParameterServer server(spec, ps::SliceLeaves(plan, 0, (*model)->parameters()));
  if (f.resume == "auto") {  // the newest complete periodic checkpoint, if any
    auto saved = ps::CompleteCheckpoints(f.checkpoint);
    f.resume = saved.empty() ? "" : saved.back().second;
    log->Info(saved.empty() ? "--resume auto: no complete checkpoint yet, starting afresh"
                            : "--resume auto: " + f.resume);
  }
  if (!f.resume.empty()) {
    if (Status r = Resume(f.resume, **model, server, 0, spec.num_servers); !r.ok()) {
      return Fail(*log, r);
    }
  }
  std::optional<ps::CheckpointRotation> rotation;
  if (!f.checkpoint_every.empty()) {
    auto every = ps::ParseCheckpointEvery(f.checkpoint_every);
    if (!every.ok()) return Fail(*log, every.status());
    rotation.emplace(f.checkpoint, *every, f.keep);
  }
  auto token = AuthToken(f.local);
  if (!token.ok()) return Fail(*log, token.status());
  asio::io_context io;
  const ps::ServiceOptions options = ServiceOptionsFor(
      f, f.world.world.master_addr, f.world.world.master_port, *token);
  ps::Service service(&io, spec, ps::Fingerprint(**model), &server, log.get(), options);
  if (spec.num_servers > 1) service.ExpectServers(&plan, (*model)->parameters());
  if (Status l = service.Listen(); !l.ok()) {
    return Fail(*log, InvalidArgument(l.message() + " (--master_port)"));
  }
  log->Emit("listen", {{"host", options.host}, {"port", service.port()},
                       {"world_size", spec.world_size},
                       {"job", ps::ToJson(spec)}});
  // Async versions can advance several at a time: evaluate on crossing.
  uint64_t evaluated = server.version();
  service.set_on_version([&](uint64_t version) {
    if (rotation && rotation->Due(version, std::chrono::steady_clock::now())) {
      // On the io thread, so no step changes the model while it is written.
      Status c = SaveModel(rotation->PathFor(version), **model, server, spec);
      if (c.ok()) c = rotation->Saved(version, std::chrono::steady_clock::now());
      if (!c.ok()) log->Info("checkpoint of version " + std::to_string(version) +
                             " failed: " + c.message());
    }
    if (spec.eval_interval > 0 &&
        version / spec.eval_interval > evaluated / spec.eval_interval) {
      evaluated = version;
      auto r = models::Evaluator(*model, test->images, test->labels).Score();
      log->Emit("eval", EvalFields(r, version));
    }
  });
  if (Status r = service.Run(); !r.ok()) return Fail(*log, r);

  if (Status c = SaveModel(f.checkpoint, **model, server, spec); !c.ok()) {
    return Fail(*log, c);
  }
  auto result = models::Evaluator(*model, test->images, test->labels).Score();
  log->Emit("eval", EvalFields(result, server.version()));
  nlohmann::json summary = service.Stats();
  summary.erase("workers");
  summary["test_accuracy"] = result.accuracy;
  summary["test_loss"] = result.loss;
  summary["checkpoint"] = f.checkpoint;
  summary["mode"] = ps::ModeName(spec.mode);
  summary["model"] = spec.model;
  summary["peak_rss_bytes"] = PeakRssBytes();
  log->Emit("summary", summary);
  return 0;
}

}  // namespace

RunFn SetupServe(CLI::App* sub) {
  auto f = std::make_shared<ServeFlags>();
  AddWorldFlags(sub, &f->world, /*with_rank=*/true);
  AddJobFlags(sub, &f->job);
  AddLocalFlags(sub, &f->local);
  sub->add_option("--checkpoint", f->checkpoint,
                  "Where the trained model is saved (a state_dict that "
                  "torch.load reads; the job spec goes beside it as .json)")
      ->capture_default_str();
  sub->add_option("--resume", f->resume,
                  "Continue from a checkpoint saved by serve: its parameters, "
                  "optimizer state (.optim.pt) and version (.json); pass the "
                  "same job flags as the run that saved it; auto: the newest "
                  "complete --checkpoint_every checkpoint, if any");
  sub->add_option("--checkpoint_every", f->checkpoint_every,
                  "Also save a checkpoint every N versions, or every Ns seconds "
                  "(e.g. 100 or 30s), beside --checkpoint as NAME-vVERSION.pt");
  sub->add_option("--keep", f->keep, "How many periodic checkpoints to keep")
      ->capture_default_str()->check(CLI::PositiveNumber);
  sub->add_option("--bind_addr", f->bind_addr,
                  "Address to listen on; default: the one --master_addr "
                  "resolves to, never all interfaces unless asked (0.0.0.0)");
  return [f] { return Serve(*f); };
}

}  // namespace pstrain::apps
