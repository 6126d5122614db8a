#pragma once
// `pstrain bench train`: the same model trained in each mode, one row per
// mode, in the manner of the ResNet-50 study's "Single / Sync / Async
// training time" table: throughput, wall time, where a step's time goes
// (compute, communication, waiting), the accuracy reached, and the speed-up
// over one process without a parameter server.
//
// "single" trains in this process (worker::TrainLocally). "sync" and
// "async" run `<pstrain_exe> launch ... --json` as a child process (one
// server and world_size-1 workers on this machine) and read its JSON Lines.
// Not thread-safe: one call at a time per process.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ps/job/job_spec.h"
#include "util/result.h"

namespace pstrain::bench {

struct TrainBenchOptions {
  /// The job of every run, as launch's flags set it (ps/job/job_fields.inc),
  /// but for the fields each run sets its own way: model and placement
  /// (from `models` and `placements`), mode (from `modes`), max_steps and
  /// epochs (`steps`). Single trains job's model, optimizer and data
  /// (worker::TrainLocally). With target_accuracy > 0, every mode
  /// evaluates every eval_interval versions (steps) and stops at the first
  /// evaluation that reaches it. Default: the table's.
  ps::JobSpec job;
  /// Models of the zoo or TorchScript files, run one after another, each in
  /// every mode ({"net", "net_scripted.pt"} compares a scripted net with
  /// the built-in one in the same run). Default: {"net"}.
  std::vector<std::string> models = {"net"};
  /// sync, async: launch's --placement of each run; several run each mode
  /// in each (single once). Default: {"worker"}.
  std::vector<std::string> placements = {"worker"};
  /// The workers' and the single process's device ("cpu", "cuda",
  /// "cuda:i"). Default: "cpu".
  std::string device = "cpu";
  /// Rows, in this order: any of "single", "sync", "async".
  std::vector<std::string> modes = {"single", "sync", "async"};
  /// sync, async: launch's --transport values, each run in turn.
  std::vector<std::string> transports = {"auto"};
  /// sync, async: launch's --replicas values, each run in turn (each at
  /// most num_servers). Default: {1}.
  std::vector<int> replicas = {1};
  /// Processes of a sync/async run: num_servers servers and the rest
  /// workers. REQUIRES: >= num_servers + 1. Default: 3.
  int world_size = 3;
  /// Servers of a sync/async run. REQUIRES: >= 1. Default: 1.
  int num_servers = 1;
  /// Steps per worker (and of the single process). Default: 200.
  int64_t steps = 200;
  /// Runs of each mode, with seeds job.seed, job.seed + 1, ...; each row is
  /// then their mean (bench/seed_runs.h). REQUIRES: >= 1. Default: 1.
  int seeds = 1;
  /// Samples per step of the single process; 0: job.batch_size. With
  /// (world_size-1) * batch_size, single sees the samples sync's workers see
  /// together (sync is then the same computation). Default: 0.
  int64_t single_batch_size = 0;
  /// Directory of the data set; "" = Debian's place for it.
  std::string data_dir;
  /// libtorch threads of the single process; 0: all cores (as `launch`
  /// gives each of its processes cores / processes). Default: 0.
  int single_threads = 0;
  /// The pstrain binary to run `launch` with; needed for sync and async.
  std::string pstrain_exe;
  /// Passed to launch as --timeout: seconds without progress before a run
  /// is declared failed. Default: 120.
  double timeout_seconds = 120;
  /// Where a temporary directory (checkpoints, captured output) is made and
  /// removed afterwards. Default: "/tmp".
  std::string scratch_dir = "/tmp";
  /// Receives one line as each mode starts; nullptr: none. Borrowed for
  /// the call.
  std::ostream* progress = nullptr;
};

/// The checks RunTrainBench makes before it runs anything: the bench's own
/// options, then each run's job as launch checks it (ps::ValidateJobSpec,
/// whose errors name the flag). kInvalidArgument.
Status ValidateTrainBench(const TrainBenchOptions& options);

/// Runs each mode in turn (for each model in turn). Returns a JSON array,
/// one object per model and mode:
///   mode, model, placement, dataset, processes, workers, threads_per_process,
///   batch_size, steps (per worker), samples (all workers),
///   wall_seconds (training only: first worker joined to last one done;
///     for single the training loop), samples_per_second (samples / wall),
///   seconds_per_step = compute_seconds_per_step +
///     communication_seconds_per_step + waiting_seconds_per_step (means over
///     workers, from the server's summary; waiting: the time the server held
///     a worker's reply for the other workers; single: all compute),
///   test_accuracy (0..1), test_loss, process_seconds (the child's whole
///     life, with start-up, data loading and evaluation; single: null),
///   peak_rss_bytes ({"server", "worker" (the largest)}, null where not
///     reported; single: {"process": this process's peak so far}),
///   speedup_over_single (samples_per_second / that of the single row of
///     the same model; null without one), lr, momentum, seed, notes (array
///     of strings);
///   seeds, test_accuracies, test_accuracy_sd, samples_per_second_sd: the
///     runs over `seeds` seeds, every number above their mean
///     (bench::MeanOverSeeds; the sds null for one seed);
///   sync, async: compression, pull_compression, bytes_per_step (a
///     worker's push plus pull, bytes) and bytes_pushed_per_step;
///   with a target: target_accuracy, time_to_target_seconds (sync, async:
///     the summary's, from the first worker joining until the version that
///     reached it was made; single: training seconds until that step) and
///     steps_to_target, both null when not reached.
/// Errors: kInvalidArgument for bad options (a run's job as
/// ps::ValidateJobSpec refuses it, naming the flag) or a run that exits 2
/// (bad input, e.g. no data set); TrainLocally's errors for single; kIOError
/// when a child cannot start or fails, with its error message.
Result<nlohmann::json> RunTrainBench(const TrainBenchOptions& options);

}  // namespace pstrain::bench
