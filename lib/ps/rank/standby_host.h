#pragma once
// StandbyHost: the standbys one server rank keeps (--replicas; see
// ps/rank/standby.h), a thread each: it makes the shard's model and
// ParameterServer, copies the primary (FollowPrimary), and when rank 0 lets
// it take the shard over, serves it through the caller's ServeTakeover.
// Threads are joined on destruction; rank 0's first end the services of
// the shards they took over, as its own run is over then (every shard is
// in, or the job failed), while other ranks' serve until their jobs end.

#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>

#include "models/model.h"
#include "ps/job/job_spec.h"
#include "ps/job/shard_plan.h"
#include "ps/rank/master_client.h"
#include "ps/rank/standby.h"
#include "ps/store/parameter_server.h"
#include "report/event_log.h"
#include "util/status.h"

namespace pstrain::ps {

/// Lets rank 0 end the service of a shard a standby took over: the serving
/// code sets `io` while it runs, and checks `stopped` before and after.
struct TakeoverStop {
  std::mutex mu;
  asio::io_context* io = nullptr;
  bool stopped = false;
};

/// A shard taken over: `master` said hello as server `rank` and was given
/// `job`, and `server` (over `model`'s slices of `plan`) holds its state,
/// with `applied` the primary's applied pushes (UpdateRule::applied).
struct TakenShard {
  int rank = 0;
  const JobSpec* job = nullptr;
  MasterClient* master = nullptr;
  models::Model* model = nullptr;
  const ShardPlan* plan = nullptr;
  ParameterServer* server = nullptr;
  const std::vector<int64_t>* applied = nullptr;
  TakeoverStop* stop = nullptr;
};

/// Serves a taken-over shard until the job ends, on the standby's thread.
using ServeTakeover = std::function<Status(const TakenShard& shard)>;

class StandbyHost {
 public:
  /// Starts a standby of each shard of `shards` (StandbyShards(spec,
  /// rank), and a rejoining rank's own), with `follow`'s rank 0 address,
  /// timeout and connection (its `shard` is set per standby). Errors end a
  /// standby with a line in `log`.
  /// `follow.in_master`: the host is rank 0's, the master's, whose end
  /// ends the services of the shards its standbys took over.
  StandbyHost(int rank, const std::vector<int>& shards, const JobSpec& spec,
              const StandbyOptions& follow, ServeTakeover serve,
              report::EventLog* log);
  ~StandbyHost();
  StandbyHost(const StandbyHost&) = delete;
  StandbyHost& operator=(const StandbyHost&) = delete;

 private:
  bool stop_at_end_;
  std::vector<std::unique_ptr<TakeoverStop>> stops_;
  std::vector<std::thread> threads_;
};

}  // namespace pstrain::ps
