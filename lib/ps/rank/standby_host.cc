#include "ps/rank/standby_host.h"

#include <string>

#include "models/model_state.h"
#include "ps/job/job_data.h"
#include "ps/job/shard_plan.h"
#include "ps/job/sparse_keys.h"
#include "ps/job/tensor_codec.h"
#include "ps/store/parameter_server.h"

namespace pstrain::ps {

namespace {

// One standby's life: copy the primary; serve its shard once taken over.
Status RunStandby(const JobSpec& spec, StandbyOptions follow,
                  const ServeTakeover& serve, TakeoverStop* stop,
                  report::EventLog* log) {
  PS_ASSIGN_OR_RETURN(std::shared_ptr<models::Model> model, MakeJobModel(spec));
  PS_ASSIGN_OR_RETURN(const ShardPlan plan,
                      PlanShardsOf(Fingerprint(*model), spec));
  const int shard = follow.shard;
  ParameterServer server(
      spec, SliceLeaves(plan, shard, models::StateValues(*model)),
      SliceRowSparse(plan, shard, RowSparseKeys(spec, *model)));
  std::vector<int64_t> applied(static_cast<size_t>(server.num_workers()), -1);
  std::unique_ptr<MasterClient> master;
  JobSpec job;
  PS_ASSIGN_OR_RETURN(
      const StandbyEnd end,
      FollowPrimary(follow, spec, server, &applied, &master, &job, log));
  if (end != StandbyEnd::kTookOver)
    return Status::Ok();
  return serve(
      {shard, &job, master.get(), model.get(), &plan, &server, &applied, stop});
}

}  // namespace

StandbyHost::StandbyHost(int rank, const std::vector<int>& shards,
                         const JobSpec& spec, const StandbyOptions& follow,
                         ServeTakeover serve, report::EventLog* log)
    : stop_at_end_(follow.in_master) {
  for (int shard : shards) {
    stops_.push_back(std::make_unique<TakeoverStop>());
    StandbyOptions mine = follow;
    mine.shard = shard;
    mine.rank = rank;
    threads_.emplace_back([spec, mine, serve, log, stop = stops_.back().get()] {
      Status s = RunStandby(spec, mine, serve, stop, log);
      if (!s.ok()) {
        log->Info("standby of rank " + std::to_string(mine.shard) +
                  " ended: " + s.message());
      }
    });
  }
}

StandbyHost::~StandbyHost() {
  for (auto& stop : stops_) {
    std::lock_guard<std::mutex> lock(stop->mu);
    stop->stopped = stop_at_end_;
    if (stop_at_end_ && stop->io)
      stop->io->stop();
  }
  for (auto& t : threads_)
    t.join();
}

}  // namespace pstrain::ps
