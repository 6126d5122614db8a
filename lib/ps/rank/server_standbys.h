#pragma once
// A server rank's standbys (--replicas; ps/rank/standby_host.h): those it
// keeps beside its own shard, and, for a rank started again with --rejoin,
// all it keeps in place of serving one.

#include <memory>

#include "ps/job/job_spec.h"
#include "ps/rank/server_rank.h"
#include "ps/rank/standby_host.h"
#include "report/event_log.h"
#include "util/status.h"

namespace pstrain::ps {

/// Standbys of the shards StandbyShards(spec, o.rank) names, and with
/// o.rejoin of o.rank's own first, each serving the shard it takes over
/// with `serve`. Destroying the host waits for each to end.
std::unique_ptr<StandbyHost> HostStandbys(const ServerRankOptions& o,
                                          const JobSpec& spec,
                                          ServeTakeover serve,
                                          report::EventLog* log);

/// What a standby of server rank `o` serves a shard it takes over with:
/// server s's service (as o.rank's own, without its listen event, metrics
/// or timeline), or, for rank 0's shard once the arbiter named this rank
/// master, the master's run (SucceedMaster, ps/rank/master_rank.h). A rank
/// fenced while it serves the shard exits (ExitFenced), unless it is rank
/// 0 still the master.
ServeTakeover TakeoverServer(const ServerRankOptions& o, report::EventLog* log);

/// --rejoin (rank o.rank > 0, lost from a running job and started again):
/// a standby serves its shard now, so this rank says hello to rank 0 as a
/// tool for the job, and keeps standbys of its own shard and of those it
/// kept before (HostStandbys), each brought up to date while the job runs
/// with a whole copy and then the steps made meanwhile (Li et al., OSDI
/// 2014, section 4.4), until their primaries' runs end; a standby whose
/// primary dies takes its shard over. Errors: rank 0's or the
/// connection's; kInvalidArgument for a job of --replicas 1.
Status ServeRejoin(const ServerRankOptions& o, ServeTakeover serve,
                   report::EventLog* log);

}  // namespace pstrain::ps
