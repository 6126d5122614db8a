// pstrain serve: one server rank of a job (ps/rank/server_rank.h). Rank 0 (the
// master) decides the job from its flags; ranks 1..S-1 take it from rank 0.

#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"
#include "apps/pstrain/job_flags.h"
#include "apps/pstrain/metrics_endpoint.h"
#include "ps/job/interval.h"
#include "ps/rank/server_rank.h"
#include "ps/rank/succession.h"

namespace pstrain::apps {

namespace {

struct ServeFlags {
  WorldFlags world;
  JobFlags job;
  LocalFlags local;
  std::string checkpoint = "pstrain-model.pt";
  std::string resume;            // "" = start from the seed's initial model
  std::string bind_addr;         // "" = master_addr's interface
  std::string checkpoint_every;  // "" = only at the end
  int keep = 3;
  bool rejoin = false;
  RdzvFlags rdzv;
};

Status Serve(ServeFlags& f, std::unique_ptr<report::EventLog>* log,
             std::unique_ptr<MetricsEndpoint>* endpoint) {
  // First: launch may name this rank the master at any time from now on.
  ps::RdzvOptions rdzv;
  rdzv.backend = f.rdzv.backend;
  rdzv.endpoint = f.rdzv.endpoint;
  rdzv.id = f.rdzv.id;
  rdzv.timeout = f.local.timeout();
  auto succession = ps::MakeSuccession(rdzv);
  Status s = succession.status();
  if (s.ok())
    s = ResolveWorld(&f.world, "server");
  if (s.ok())
    s = CheckFlagNeeds(f.local.needs);
  if (s.ok())
    s = FinishJobSpec(&f.job, f.world.world.world_size,
                      f.world.world.num_servers);
  const int rank = s.ok() ? f.world.world.rank : 0;
  if (s.ok()) {
    auto started = StartMetrics(f.local, rank, "server");
    s = started.status();
    if (started.ok())
      *endpoint = std::move(*started);
  }
  *log = MakeEventLog(f.local, rank, "server", endpoint->get());
  PS_RETURN_IF_ERROR(s);
  ps::ServerRankOptions o;
  const auto& w = f.world.world;
  o.rank = w.rank;
  o.world_size = w.world_size;
  o.master_addr = w.master_addr;
  o.master_port = w.master_port;
  o.spec = f.job.spec;
  o.data_dir = f.local.data_dir;
  o.threads = f.local.threads;
  o.timeout = f.local.timeout();
  o.max_frame_bytes = f.local.max_frame_bytes;
  PS_ASSIGN_OR_RETURN(o.auth_token, AuthToken(f.local));
  o.checkpoint = f.checkpoint;
  o.resume = f.resume;
  o.bind_addr = f.bind_addr;
  o.rejoin = f.rejoin;
  o.succession = succession->get();
  if (!f.checkpoint_every.empty()) {
    PS_ASSIGN_OR_RETURN(
        o.checkpoint_every,
        ps::ParseInterval("--checkpoint_every", f.checkpoint_every));
  }
  o.keep = f.keep;
  if (*endpoint) {
    o.metrics = &(*endpoint)->registry;
    o.metrics_port = (*endpoint)->http->port();
    o.on_progress = [e = endpoint->get()](nlohmann::json event) {
      e->history.Add(std::move(event));
    };
  }
  auto timeline = MakeTimeline(f.local, w.rank, "server");
  o.timeline = timeline.get();
  Status ran = ps::RunServerRank(o, log->get());
  WriteTimeline(f.local, timeline.get(), **log);
  PS_RETURN_IF_ERROR(ran);
  LingerForScrapes(f.local, endpoint->get());
  return Status::Ok();
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
  sub->add_option(
      "--checkpoint_every", f->checkpoint_every,
      "Also save a checkpoint every N versions, or every Ns seconds "
      "(e.g. 100 or 30s), beside --checkpoint as NAME-vVERSION.pt");
  const CLI::Option* keep =
      sub->add_option("--keep", f->keep,
                      "How many periodic checkpoints to keep")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
  // Only periodic checkpoints are pruned: those --checkpoint_every saves,
  // and those a kill left that --resume auto finds.
  ServeFlags* flags = f.get();  // f owns the need: no cycle through it
  f->local.needs.push_back(
      {keep, "--checkpoint_every or --resume auto", [flags] {
         return !flags->checkpoint_every.empty() || flags->resume == "auto";
       }});
  sub->add_flag("--rejoin", f->rejoin,
                "A server rank started again after it was lost from a running "
                "job (--replicas 2 or more): it becomes a standby of its own "
                "shard, which a standby took over, and of those it kept, each "
                "brought up to date while the job runs, and takes a shard "
                "over when its primary dies");
  AddRdzvFlags(sub, &f->rdzv, {"static", "launch", "etcd"},
               "Who names the next master when rank 0 dies (--replicas 2 "
               "or more): static (no one: its death ends the job), launch "
               "(pstrain launch, which sees it die, names the first live "
               "standby of its shard; launch sets this) or etcd (the master "
               "holds a lease in etcd at --rdzv_endpoint; once it lapses, "
               "the standby of rank 0's shard takes it; every rank finds the "
               "master there)");
  sub->add_option("--bind_addr", f->bind_addr,
                  "Address to listen on; default: the one --master_addr "
                  "resolves to, never all interfaces unless asked (0.0.0.0)");
  return [f] {
    std::unique_ptr<MetricsEndpoint> endpoint;  // outlives the log
    std::unique_ptr<report::EventLog> log;
    Status s = Serve(*f, &log, &endpoint);
    if (!log)
      log = MakeEventLog(f->local, 0, "server");
    return s.ok() ? 0 : Fail(*log, s);
  };
}

}  // namespace pstrain::apps
