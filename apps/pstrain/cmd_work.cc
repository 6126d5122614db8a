// pstrain work: a worker rank. Its flags describe only this machine; the job
// comes from rank 0 at the handshake.

#include "apps/pstrain/build_hooks.h"
#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"
#include "apps/pstrain/metrics_endpoint.h"
#include "rdzv/master_key.h"
#include "worker/trainer.h"

namespace pstrain::apps {

namespace {

struct WorkFlags {
  WorldFlags world;
  LocalFlags local;
  std::string device = "cpu";
  std::string model;
  double reconnect_timeout = 60;
  RdzvFlags rdzv;
  WorkHook hook;
};

int Work(WorkFlags& f) {
  Status s = ResolveWorld(&f.world, "worker");
  if (s.ok())
    s = CheckFlagNeeds(f.local.needs);
  std::unique_ptr<MetricsEndpoint> endpoint;  // outlives the log
  if (s.ok()) {
    auto started = StartMetrics(f.local, f.world.world.rank, "worker");
    s = started.status();
    if (started.ok())
      endpoint = std::move(*started);
  }
  auto log =
      MakeEventLog(f.local, f.world.world.rank, "worker", endpoint.get());
  if (!s.ok())
    return Fail(*log, s);
  if (endpoint) {
    log->Emit("listen", {{"host", f.local.metrics_addr},
                         {"metrics_port", endpoint->http->port()}});
  }
  SetThreads(f.local.threads);
  worker::TrainerOptions o;
  o.master_addr = f.world.world.master_addr;
  o.master_port = f.world.world.master_port;
  o.rank = f.world.world.rank;
  o.world_size = f.world.world.world_size;
  o.data_dir = f.local.data_dir;
  o.device = f.device;
  o.model = f.model;
  o.timeout = f.local.timeout();
  o.max_frame_bytes = f.local.max_frame_bytes;
  auto token = AuthToken(f.local);
  if (!token.ok())
    return Fail(*log, token.status());
  o.auth_token = *token;
  o.reconnect_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(f.reconnect_timeout * 1000));
  o.metrics = endpoint ? &endpoint->registry : nullptr;
  std::unique_ptr<rdzv::MasterKey> master_key;
  if (f.rdzv.backend == "etcd") {
    if (f.rdzv.endpoint.empty()) {
      return Fail(*log, InvalidArgument("--rdzv_backend etcd: expected "
                                        "--rdzv_endpoint host:port of etcd"));
    }
    master_key = std::make_unique<rdzv::MasterKey>(f.rdzv.endpoint, f.rdzv.id,
                                                   o.timeout);
    o.master_key = master_key.get();
  }
  f.hook(&o);
  auto timeline = MakeTimeline(f.local, o.rank, "worker");
  o.timeline = timeline.get();
  Status r = worker::RunWorker(o, log.get());
  WriteTimeline(f.local, timeline.get(), *log);
  if (!r.ok())
    return Fail(*log, r);
  LingerForScrapes(f.local, endpoint.get());
  return 0;
}

}  // namespace

RunFn SetupWork(CLI::App* sub) {
  auto f = std::make_shared<WorkFlags>();
  AddWorldFlags(sub, &f->world, /*with_rank=*/true);
  AddLocalFlags(sub, &f->local);
  sub->add_option("--device", f->device, "cpu, cuda or cuda:i")
      ->capture_default_str();
  sub->add_option("--model", f->model,
                  "This worker's copy of the job's TorchScript module, used "
                  "when its SHA-256 is rank 0's (refused otherwise); "
                  "default: rank 0 sends the module's bytes");
  sub->add_option(
         "--reconnect_timeout", f->reconnect_timeout,
         "Seconds to keep reconnecting, with exponential backoff, to a server "
         "that went away (restarted, say), then go on from its version (0: "
         "give up at once)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddRdzvFlags(sub, &f->rdzv, {"static", "etcd"},
               "Where the master is found: static (at --master_addr and "
               "--master_port) or etcd (where the master says in etcd at "
               "--rdzv_endpoint, again each time the master is lost)");
  f->hook = AddWorkHooks(sub);
  return [f] { return Work(*f); };
}

}  // namespace pstrain::apps
