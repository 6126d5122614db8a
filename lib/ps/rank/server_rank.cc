#include "ps/rank/server_rank.h"

#include <unistd.h>

#include <memory>
#include <mutex>
#include <optional>

#include <asio/io_context.hpp>
#include <torch/torch.h>

#include "models/compute_threads.h"
#include "models/model_state.h"
#include "models/model_zoo.h"
#include "ps/engine/snapshot_desk.h"
#include "ps/engine/step_driver.h"
#include "ps/job/job_data.h"
#include "ps/job/job_module.h"
#include "ps/job/shard_plan.h"
#include "ps/job/sparse_keys.h"
#include "ps/job/tensor_codec.h"
#include "ps/rank/checkpoint_rotation.h"
#include "ps/rank/master_client.h"
#include "ps/rank/master_rank.h"
#include "ps/rank/rank_setup.h"
#include "ps/rank/server_beats.h"
#include "ps/rank/server_metrics_feed.h"
#include "ps/rank/server_resume.h"
#include "ps/rank/server_standbys.h"
#include "ps/rank/standby_host.h"
#include "ps/rank/succession.h"
#include "ps/service/service.h"
#include "ps/store/checkpoint.h"
#include "ps/store/parameter_server.h"
#include "rdzv/master_key.h"

namespace pstrain::ps {

namespace {

// Where the arbiter names the master now ("host:port"): nullopt where it
// names none (launch, static: the job's master address), or none yet.
std::optional<std::string> NamedMaster(const ServerRankOptions& o) {
  std::string host;
  int port = 0;
  if (o.succession == nullptr || !o.succession->Campaigns() ||
      !FindMaster(o.succession, {}, "", &host, &port).ok()) {
    return std::nullopt;
  }
  return host + ":" + std::to_string(port);
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
  // 0's word: once fenced (or once rank 0 is gone, and no successor takes
  // its place) it serves no more.
  std::function<Status()> rejoin;
  // The master `master` joined: the one the arbiter names now (a standby
  // that took a shard over joined a master named after this process
  // started), else the job's master address.
  std::string master_at = NamedMaster(o).value_or(
      o.master_addr + ":" + std::to_string(o.master_port));
  if (o.succession) {
    rejoin = [&o, &master, &spec, &address, &master_at, log] {
      log->Info("server " + std::to_string(o.rank) +
                ": lost rank 0 (the master); joining its successor");
      std::string host = o.master_addr;
      int port = o.master_port;
      PS_RETURN_IF_ERROR(FindMaster(o.succession,
                                    2 * rdzv::LeaseFor(spec.dead_after),
                                    master_at, &host, &port));
      master_at = host + ":" + std::to_string(port);
      return master.Rejoin(host, port, o.rank, spec.world_size, address);
    };
  }
  // Where the arbiter says where the master is (etcd), a master named in
  // another's place is joined at once: a stopped one is silent.
  const auto moved = [&o, &master_at] {
    const std::optional<std::string> named = NamedMaster(o);
    return named && *named != master_at;
  };
  auto beats = std::make_unique<ServerBeats>(
      spec.dead_after, &master, [&io](const Status&) { io.stop(); },
      std::move(rejoin), moved);
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

}  // namespace

ServeTakeover TakeoverServer(const ServerRankOptions& o,
                             report::EventLog* log) {
  return [o, log](const TakenShard& shard) {
    if (shard.rank == 0)
      return SucceedMaster(o, shard, log);  // the arbiter named us master
    ServerRankOptions taken = o;
    taken.rank = shard.rank;
    taken.metrics = nullptr;
    taken.metrics_port = -1;
    taken.timeline = nullptr;
    taken.on_listen = nullptr;
    Status served =
        ServeShard(taken, *shard.master, *shard.job, *shard.model, *shard.plan,
                   *shard.server, log, shard.stop, shard.applied);
    // The process that is rank 0's master keeps serving the job; any
    // other (rank 0 too, rejoined once another was master) exits.
    if (!served.ok() && (o.rank > 0 || o.rejoin) && shard.master->ended())
      ExitFenced(served, log);
    return served;
  };
}

namespace {

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

}  // namespace

Status RunServerRank(const ServerRankOptions& given, report::EventLog* log) {
  ServerRankOptions options = given;
  if (Succession* arbiter = options.succession) {
    arbiter->set_on_lost([log](const Status& why) { ExitFenced(why, log); });
    // Every rank but a starting rank 0 finds the master where the
    // arbiter says (etcd), which rank 0 tells once it listens.
    if (arbiter->Campaigns() && (options.rank > 0 || options.rejoin)) {
      PS_RETURN_IF_ERROR(FindLiveMaster(arbiter, options.timeout,
                                        &options.master_addr,
                                        &options.master_port));
    }
  }
  if (options.rank > 0)
    return options.rejoin
               ? ServeRejoin(options, TakeoverServer(options, log), log)
               : ServeSlices(options, log);
  // Rank 0 rejoins a job whose master it was only where a successor took
  // its place: under launch (--rdzv_backend launch).
  if (options.rejoin && options.succession == nullptr) {
    return InvalidArgument(
        "--rejoin: rank 0 rejoins only where launch named a successor "
        "(--rdzv_backend launch); without one it is the master");
  }
  if (options.rejoin)
    return ServeRejoin(options, TakeoverServer(options, log), log);
  return ServeMaster(options, log);
}

}  // namespace pstrain::ps
