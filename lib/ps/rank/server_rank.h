#pragma once
// The life of one server rank of a job, behind one call: `pstrain serve`
// is its flags and this. Rank 0 (the master) decides the job, serves its
// slices of the model, evaluates and checkpoints in the background
// (ps/rank/observer.h), stops at --target_accuracy, then saves and scores the
// final model (or the one that reached the target) and emits the summary.
// Ranks 1..S-1 take the job from rank 0, serve their slices on a port the
// kernel picks, and hand rank 0 their slices and optimizer state at the
// end. Resume (--resume PATH or auto) restores every server's slices,
// optimizer state and version. One call per process; not thread-safe.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "ps/job/interval.h"
#include "ps/job/job_spec.h"
#include "ps/rank/observer.h"
#include "report/event_log.h"
#include "util/result.h"

namespace pstrain::metrics {
class Registry;
}  // namespace pstrain::metrics
namespace pstrain::trace {
class Timeline;
}  // namespace pstrain::trace

namespace pstrain::ps {

class Succession;

struct ServerRankOptions {
  /// This server's rank (0..spec.num_servers-1) and the job's size.
  int rank = 0;
  int world_size = 0;
  /// Where rank 0 listens (rank 0: where it binds unless bind_addr is set).
  std::string master_addr = "localhost";
  /// 0: the kernel picks (rank 0; see on_listen).
  int master_port = 29500;
  /// Rank 0: the job. Ranks 1..S-1 take rank 0's instead.
  JobSpec spec;
  /// Directory of the test set's IDX files; "" = Debian's place for it.
  std::string data_dir;
  /// Compute threads while training (0: libtorch's default); the final
  /// evaluation uses every core.
  int threads = 0;
  std::chrono::milliseconds timeout{120000};
  uint64_t max_frame_bytes = uint64_t{1} << 32;
  /// The --auth_token_file token; "" = none.
  std::string auth_token;
  /// Where the final model goes (and, versioned, the periodic ones).
  std::string checkpoint = "pstrain-model.pt";
  /// "" (start from the seed), a checkpoint path, or "auto" (the newest
  /// complete periodic checkpoint, if any; ranks 1..S-1: rank 0's choice).
  std::string resume;
  /// --rejoin (ranks 1..S-1): started again after this rank was lost, it
  /// keeps standbys of its own shard and of those StandbyShards names,
  /// and serves a shard only once it takes one over.
  bool rejoin = false;
  /// Address to listen on; "" = the one master_addr resolves to (rank 0)
  /// or the interface that reaches rank 0 (ranks 1..S-1).
  std::string bind_addr;
  /// Rank 0: --checkpoint_every and --keep.
  Interval checkpoint_every;
  int keep = 3;
  /// Rank 0: what scores a whole model's state. nullptr (the default): the
  /// models::Evaluator on the job's test set. A test may slow it down.
  std::function<Result<ScoreFn>(const JobSpec& spec)> make_scorer;
  /// Called once the server listens, with its port. Default: none.
  std::function<void(int port)> on_listen;
  /// --metrics_port: the registry this rank's metrics go into (labelled
  /// with the job's id here), and the port serving them, which the listen
  /// event announces. Default: nullptr and -1, none.
  metrics::Registry* metrics = nullptr;
  int metrics_port = -1;
  /// Rank 0: receives the run's `progress` events (ps/rank/live_progress.h),
  /// on the io thread. Default: none.
  std::function<void(nlohmann::json event)> on_progress;
  /// --rdzv_backend launch: the arbiter's word that this rank is the
  /// master now (ps/rank/succession.h), which must outlive the call; its
  /// standby of rank 0's shard then takes the master's roles over, and
  /// its servers rejoin a successor when rank 0 is gone. nullptr (the
  /// default, static): rank 0's death ends the job.
  Succession* succession = nullptr;
  /// --timeline: where this rank's spans go (trace/timeline.h); it must
  /// outlive the call. nullptr (the default): none are recorded.
  trace::Timeline* timeline = nullptr;
};

/// Serves until the job ends. Errors carry their exit code's kind
/// (util/status.h): bad flags or input (kInvalidArgument, kNotFound,
/// kIncompatible), a failed run (kTimeout, kUnavailable, kIOError), each
/// with a one-line message.
Status RunServerRank(const ServerRankOptions& options, report::EventLog* log);

}  // namespace pstrain::ps
