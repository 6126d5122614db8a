#pragma once
// The master's run: rank 0's, which decides the job from its flags, and a
// successor's, a standby of rank 0's shard that the arbiter named master
// when rank 0 died (ps/rank/succession.h). Either serves rank 0's shard
// where the job's master address is, holds the roster of servers and
// hands out the job, evaluates and checkpoints in the background
// (ps/rank/observer.h), and at the end merges every server's final shard,
// saves and scores the final model and emits the summary.

#include "ps/rank/server_rank.h"
#include "ps/rank/standby_host.h"
#include "report/event_log.h"
#include "util/status.h"

namespace pstrain::ps {

/// Rank 0 (o.rank == 0): serves until the job ends. Errors as
/// RunServerRank's; kInvalidArgument naming --master_port when the
/// address cannot be bound.
Status ServeMaster(const ServerRankOptions& o, report::EventLog* log);

/// A standby of rank 0's shard that the arbiter named master: serves
/// `shard` (its rank is 0; no master client) at o.master_addr:
/// o.master_port, where the servers and workers that lost rank 0 come back
/// to, with the job `shard.job` rank 0 gave, and ends the job as rank 0
/// would have: the same final checkpoint, accuracy line and summary.
/// Errors as ServeMaster's; those of opening the test set from o.data_dir.
Status SucceedMaster(const ServerRankOptions& o, const TakenShard& shard,
                     report::EventLog* log);

}  // namespace pstrain::ps
