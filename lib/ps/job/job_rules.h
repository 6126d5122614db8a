#pragma once
// Rules of the job spec (ps/job/job_spec.h) that concern what trains where:
// the model (a built-in name or a TorchScript file, its hash, --loss) and
// its placement (--placement), and how many copies of each shard
// the servers keep (--replicas). ValidateJobSpec calls them after the other
// rules. Free functions; thread-safe.

#include "ps/job/job_spec.h"
#include "util/status.h"

namespace pstrain::ps {

/// --model, model_sha256 and --loss: kInvalidArgument naming the flag
/// ("--loss mse: the built-in model net is a classifier ...").
Status CheckModelRules(const JobSpec& spec);

/// --placement: worker or server, and what the server's model refuses
/// ("--placement server: the model lives on one server, not 2").
Status CheckPlacementRules(const JobSpec& spec);

/// --replicas: at most --num_servers copies of a shard (kInvalidArgument
/// "--replicas 3: expected 1..2 (at most --num_servers copies of a
/// shard)").
Status CheckReplicaRules(const JobSpec& spec);

/// The fields that only mean something beside another (--staleness: --mode
/// ssp; --vocab_size: --dataset text; --send_window: --priority; ...): one
/// set to other than the table's default while the other is not is
/// refused, kInvalidArgument "--staleness: only with --mode ssp".
Status CheckFieldNeeds(const JobSpec& spec);

/// Whether the job's model runs on the server (--placement server): the
/// workers push batches rather than gradients.
bool IsServerPlacement(const JobSpec& spec);

}  // namespace pstrain::ps
