#pragma once
// What every server rank's service is built from, whichever role it
// serves: rank 0's (the master, ps/rank/master_rank.h), server s's, or a
// standby's that took either over (ps/rank/server_rank.h).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/evaluator.h"
#include "models/model.h"
#include "ps/job/job_spec.h"
#include "ps/job/shard_plan.h"
#include "ps/rank/server_rank.h"
#include "ps/service/service.h"
#include "wire/messages.h"

namespace pstrain::ps {

/// The service options of rank `o`, listening at `host`:`port` (bind_addr
/// instead of `host` when set; port 0: the kernel picks).
ServiceOptions ServiceOptionsFor(const ServerRankOptions& o,
                                 const std::string& host, int port);

/// A listen event's fields, with the port of /metrics when it is served.
nlohmann::json WithMetricsPort(const ServerRankOptions& o,
                               nlohmann::json fields);

/// --timeline: server `rank`'s keys (its slices) by name, "fc1.weight" or,
/// for a slice of a key's rows, "fc1.weight[0:64]". No-op for nullptr.
void NameKeys(trace::Timeline* timeline, const ShardPlan& plan, int rank,
              const std::vector<wire::KeySpec>& model_keys);

/// Parameters and buffers: what the servers hold and checkpoints keep.
models::NamedTensors NamedState(models::Model& model);

/// The shard plan of a job whose spec was validated (dies otherwise).
ShardPlan PlanOrDie(models::Model& model, const JobSpec& spec);

}  // namespace pstrain::ps
