#pragma once
// JobSpec: everything about a training job that must be the same on every
// process. Rank 0's flags decide it; it reaches workers at the handshake as
// JSON, so two terminals can never disagree on, say, the learning rate.
// A value type.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "util/result.h"
#include "util/status.h"

namespace pstrain::ps {

/// kSsp: the ParameterServer applies pushes as in kAsync; the Service bounds
/// how far a worker may run ahead of the slowest (JobSpec::staleness).
enum class Mode { kSync, kAsync, kSsp };
/// "sync", "async", "ssp".
const char* ModeName(Mode mode);
/// kInvalidArgument "--mode 'x': expected sync, async or ssp".
Result<Mode> ParseMode(const std::string& name);

struct JobSpec {
  std::string model = "net";               // models::ModelNames()
  std::string dataset = "fashion-mnist";   // data::DatasetNames()
  Mode mode = Mode::kSync;
  int64_t staleness = 0;                   // ssp: versions a worker may run ahead
  std::string optimizer = "sgd";           // ps::OptimizerNames()
  double lr = 0.03;                        // the RPC tutorial's
  double momentum = 0.9;                   // sgd, rmsprop; the tutorial has none; 0.9 reaches 0.85 in one epoch
  bool nesterov = false;                   // sgd
  double weight_decay = 0.0;
  std::array<double, 2> betas = {0.9, 0.999};  // adam, adamw
  double eps = 0;                          // adam, adamw, adagrad, rmsprop; 0: libtorch's default
  std::string lr_schedule = "constant";    // ps::ParseLrSchedule
  // async, ssp; ps::ParseStalenessLr. Not none by default: with several
  // workers' pushes each applied with momentum 0.9, plain ssp diverged.
  std::string staleness_lr = "inverse";
  int64_t total_steps = 0;                 // versions a cosine schedule spans; 0: from max_steps
  int64_t batch_size = 32;                 // per worker, samples
  int64_t epochs = 1;
  int64_t max_steps = 0;                   // per worker; 0: no limit
  uint64_t seed = 1;
  int64_t eval_interval = 0;               // server versions; 0: at the end
  double eval_seconds = 0;                 // or seconds (--eval_interval 30s); 0: none
  double target_accuracy = 0;              // stop at the first evaluation reaching it; 0: none
  int64_t log_interval = 10;               // steps between step events
  int world_size = 0;
  int num_servers = 1;
  uint64_t slice_bytes = 512 * 1024;       // num_servers > 1: larger keys split by rows (ps/shard_plan.h)
  int backup_workers = 0;                  // sync: a step closes after num_workers - b pushes
  double step_timeout = 0;                 // sync: seconds before a step closes without the late; 0: never
  int server_threads = 1;                  // threads per server stepping disjoint groups of keys
  double heartbeat = 5;                    // seconds between a computing worker's heartbeats
  bool reassign_shards = false;            // sync: the live workers share a lost one's samples
  double dead_after = 30;                  // sync: seconds without word before a worker is lost; 0: never
  /// "host:port" of servers 0..num_servers-1, where workers reach them.
  /// Filled by rank 0 when it answers a worker's get_job; empty before.
  std::vector<std::string> server_addrs;
  /// The version rank 0 resumed from (0: none), which servers 1..S-1 given
  /// --resume auto then load too. Filled by rank 0, never a flag.
  uint64_t resume_version = 0;

  int num_workers() const { return world_size - num_servers; }
};

/// kInvalidArgument naming the flag: "--lr -1: expected > 0".
Status ValidateJobSpec(const JobSpec& spec);

nlohmann::json ToJson(const JobSpec& spec);
/// kInvalidArgument naming the missing or mistyped field.
Result<JobSpec> JobSpecFromJson(const nlohmann::json& j);

/// The job spec a peer sent (`json`, the text of wire::JobSpecMsg), checked
/// as everything received must be: JSON, every field present and typed,
/// valid (ValidateJobSpec), a world of at least one server and one worker,
/// and none or num_servers server addresses. kInvalidArgument "the job spec
/// from <from>: <why>" otherwise (<from>: "rank 0").
Result<JobSpec> JobSpecFromPeer(std::string_view json, const std::string& from);

}  // namespace pstrain::ps
