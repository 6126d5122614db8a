#include "ps/rank/server_standbys.h"

#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "models/compute_threads.h"
#include "ps/job/job_module.h"
#include "ps/rank/master_client.h"
#include "ps/rank/standby.h"

namespace pstrain::ps {

std::unique_ptr<StandbyHost> HostStandbys(const ServerRankOptions& o,
                                          const JobSpec& spec,
                                          ServeTakeover serve,
                                          report::EventLog* log) {
  std::vector<int> shards = StandbyShards(spec, o.rank);
  if (o.rejoin)
    shards.insert(shards.begin(), o.rank);
  StandbyOptions follow;
  follow.master_addr = o.master_addr;
  follow.master_port = o.master_port;
  follow.timeout = o.timeout;
  follow.connection =
      net::ConnectionOptions{o.max_frame_bytes, spec.dead_after};
  follow.auth_token = o.auth_token;
  follow.succession = o.succession;
  // Rank 0's, unless it rejoins: then a successor is the master.
  follow.in_master = o.rank == 0 && !o.rejoin;
  return std::make_unique<StandbyHost>(o.rank, shards, spec, follow,
                                       std::move(serve), log);
}

Status ServeRejoin(const ServerRankOptions& o, ServeTakeover serve,
                   report::EventLog* log) {
  MasterClient ask(o.timeout, net::ConnectionOptions{o.max_frame_bytes},
                   o.auth_token);
  PS_RETURN_IF_ERROR(ask.Connect(o.master_addr, o.master_port));
  PS_ASSIGN_OR_RETURN(JobSpec spec,
                      ask.Handshake(0, o.world_size, wire::Role::kTool));
  if (IsScriptJob(spec)) {
    PS_ASSIGN_OR_RETURN(spec.module, ask.FetchModule(spec.model_sha256));
  }
  if (spec.replicas < 2) {
    return InvalidArgument(
        "--rejoin: the job has --replicas 1, so no standby "
        "took rank " +
        std::to_string(o.rank) + "'s shard over; start it without --rejoin");
  }
  models::SetComputeThreads(o.threads);
  torch::manual_seed(spec.seed);
  log->Info("rejoins the job as a standby of its shard (--rejoin)");
  HostStandbys(o, spec, std::move(serve), log).reset();  // waits for them
  return Status::Ok();
}

}  // namespace pstrain::ps
