#pragma once
// JobSpec: everything about a training job that must be the same on every
// process. Rank 0's flags decide it; it reaches workers at the handshake as
// JSON, so two terminals can never disagree on, say, the learning rate.
// A value type.

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "util/result.h"
#include "util/status.h"

namespace pstrain::ps {

enum class Mode { kSync, kAsync };
/// "sync", "async".
const char* ModeName(Mode mode);
/// kInvalidArgument "--mode 'x': expected sync or async".
Result<Mode> ParseMode(const std::string& name);

struct JobSpec {
  std::string model = "net";               // models::ModelNames()
  std::string dataset = "fashion-mnist";   // data::DatasetNames()
  Mode mode = Mode::kSync;
  std::string optimizer = "sgd";
  double lr = 0.03;                        // the RPC tutorial's
  double momentum = 0.9;                   // the tutorial has none; 0.9 reaches 0.85 in one epoch
  double weight_decay = 0.0;
  int64_t batch_size = 32;                 // per worker, samples
  int64_t epochs = 1;
  int64_t max_steps = 0;                   // per worker; 0: no limit
  uint64_t seed = 1;
  int64_t eval_interval = 0;               // server versions; 0: at the end
  int64_t log_interval = 10;               // steps between step events
  int world_size = 0;
  int num_servers = 1;

  int num_workers() const { return world_size - num_servers; }
};

/// kInvalidArgument naming the flag: "--lr -1: expected > 0".
Status ValidateJobSpec(const JobSpec& spec);

nlohmann::json ToJson(const JobSpec& spec);
/// kInvalidArgument naming the missing or mistyped field.
Result<JobSpec> JobSpecFromJson(const nlohmann::json& j);

}  // namespace pstrain::ps
