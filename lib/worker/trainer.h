#pragma once
// The worker's training loop: connect to the master, take the job spec,
// build the model, pull, then per step forward/backward on this worker's
// shard and one push-pull round trip, which overlaps backward (gradients
// leave as they are made) and the next forward (parameters arrive layer by
// layer); finally report stats and exit. One call per process; not
// thread-safe.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "report/event_log.h"
#include "util/result.h"
#include "util/status.h"

namespace pstrain::models {
class Model;
}  // namespace pstrain::models
namespace pstrain::data {
struct Batch;
}  // namespace pstrain::data
namespace pstrain::metrics {
class Registry;
}  // namespace pstrain::metrics
namespace pstrain::trace {
class Timeline;
}  // namespace pstrain::trace
namespace pstrain::rdzv {
class MasterKey;
}  // namespace pstrain::rdzv

namespace pstrain::worker {

struct TrainerOptions {
  std::string master_addr = "localhost";
  int master_port = 29500;
  /// --rdzv_backend etcd: where the master says it listens instead
  /// (rdzv/master_key.h), at the start and each time it is lost; it must
  /// outlive the call. nullptr (the default): at master_addr:master_port.
  rdzv::MasterKey* master_key = nullptr;
  int rank = 1;
  int world_size = 2;
  /// Directory of the data set's IDX files; "" = Debian's place for it.
  std::string data_dir;
  /// This worker's --model: its own copy of the job's TorchScript module,
  /// used when its SHA-256 is rank 0's and refused otherwise, or the
  /// built-in model the job trains (ps::UseOwnModuleFile). "" (the
  /// default): whatever rank 0 says; it sends a module's bytes.
  std::string model;
  /// "cpu" or "cuda" (where this libtorch has CUDA and a GPU is visible).
  std::string device = "cpu";
  /// Longest wait for the server, for connecting and for each reply.
  std::chrono::milliseconds timeout{120000};
  uint64_t max_frame_bytes = uint64_t{1} << 32;
  /// The --auth_token_file token; "" (the default): none.
  std::string auth_token;
  /// Builds the model the job names. Default (empty): models::MakeModel.
  /// A test build swaps in another model to test the fingerprint check.
  std::function<Result<std::shared_ptr<models::Model>>(const std::string& name)>
      make_model;
  /// Called on the training thread as each step's compute begins; its time
  /// counts as compute. Default (empty): none. A test build slows a worker
  /// with it.
  std::function<void()> before_step;
  /// The ids a batch looks up in the model's embeddings (int64, any
  /// shape), for --sparse_embeddings (ps/job/sparse_keys.h): a push carries the
  /// rows of this batch's unique ids and asks for those of the next
  /// batch's. Every row-sparse key is looked up with these ids. Default
  /// (empty): the batch's input when it is int64 (a classifier over token
  /// ids), else none: the keys then travel as no rows, which only a model
  /// that never looks them up may do. A language model's loop sets its own.
  std::function<at::Tensor(const data::Batch&)> batch_ids;
  /// How long to keep reconnecting to a server whose connection was lost
  /// (backoff 0.1 s doubling to 5 s); 0: fail at once. Default: 60 s.
  std::chrono::milliseconds reconnect_timeout{60000};
  /// --metrics_port: the registry this worker's metrics go into (labelled
  /// with the job's id once it is known). Default: nullptr, none.
  metrics::Registry* metrics = nullptr;
  /// --timeline: where this worker's spans go (trace/timeline.h); it must
  /// outlive the call. nullptr (the default): none are recorded.
  trace::Timeline* timeline = nullptr;
};

/// Trains until the job's epochs or max_steps are done. Returns
/// kInvalidArgument / kNotFound / kIncompatible for bad usage or input
/// (a bad flag, missing data, a refused handshake or model), kTimeout or
/// kUnavailable when the server is gone or silent, with a one-line message.
/// `*log` receives step, epoch and summary events.
Status RunWorker(const TrainerOptions& options, report::EventLog* log);

}  // namespace pstrain::worker
