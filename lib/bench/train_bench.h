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

#include "util/result.h"

namespace pstrain::bench {

struct TrainBenchOptions {
  /// Model of the zoo or a TorchScript file (--model PATH), and data set,
  /// by name. Several models, comma-separated, run one after another, each
  /// in every mode ("net,net_scripted.pt" compares a scripted net with the
  /// built-in one in the same run). Defaults: "net", "fashion-mnist".
  std::string model = "net";
  std::string dataset = "fashion-mnist";
  /// A TorchScript model's --loss (the zoo's train with nll). Default:
  /// "cross_entropy".
  std::string loss = "cross_entropy";
  /// sync, async: launch's --placement; "worker,server" runs each mode in
  /// both (single once). Default: "worker".
  std::string placement = "worker";
  /// The workers' and the single process's device ("cpu", "cuda",
  /// "cuda:i"), and launch's --num_gpus (the server's model). Defaults:
  /// "cpu", 0.
  std::string device = "cpu";
  int num_gpus = 0;
  /// Rows, in this order: any of "single", "sync", "async".
  std::vector<std::string> modes = {"single", "sync", "async"};
  /// Processes of a sync/async run: one server and world_size-1 workers.
  /// REQUIRES: >= 2. Default: 3.
  int world_size = 3;
  /// Steps per worker (and of the single process). Default: 200.
  int64_t steps = 200;
  /// Samples per worker per step. Default: 32.
  int64_t batch_size = 32;
  /// Samples per step of the single process; 0: batch_size. With
  /// (world_size-1) * batch_size, single sees the samples sync's workers see
  /// together (sync is then the same computation). Default: 0.
  int64_t single_batch_size = 0;
  /// Directory of the data set; "" = Debian's place for it.
  std::string data_dir;
  /// imagefolder: side of the crop, pixels. Default: 224.
  int64_t image_size = 224;
  /// Threads of each worker (and of single) reading batches. Default: 2.
  int data_threads = 2;
  /// SGD's learning rate and momentum, and the seed. Defaults: 0.03, 0.9, 1.
  double lr = 0.03, momentum = 0.9;
  /// The job's --lr_schedule, for every mode. Default: "auto" (cosine over
  /// the steps for the ResNets, constant otherwise; ps::ResolveLrSchedule).
  std::string lr_schedule = "auto";
  /// The optimizer (launch's --optimizer) and --clip_grad_norm. Defaults:
  /// "sgd", 0 (off).
  std::string optimizer = "sgd";
  double clip_grad_norm = 0;
  /// lstm_lm on --dataset text (launch's flags of the same names); the
  /// defaults are the job's. batch_size counts streams (columns); a row's
  /// samples are target tokens.
  int64_t vocab_size = 10000, bptt = 35;
  int64_t embed_dim = 256, hidden_dim = 512, num_layers = 1;
  double dropout = 0;
  bool tie_weights = false;
  /// launch's --sparse_embeddings (sync, async: the rows an embedding's
  /// batch touches travel alone). Default: true, the job's default.
  bool sparse_embeddings = true;
  /// sync, async: launch's --compression (push codec) and
  /// --pull_compression, e.g. "topk:0.01", "fp16". Defaults: "none".
  std::string compression = "none", pull_compression = "none";
  uint64_t seed = 1;
  /// libtorch threads of the single process; 0: all cores (as `launch`
  /// gives each of its processes cores / processes). Default: 0.
  int single_threads = 0;
  /// The pstrain binary to run `launch` with; needed for sync and async.
  std::string pstrain_exe;
  /// Passed to launch as --timeout: seconds without progress before a run
  /// is declared failed. Default: 120.
  double timeout_seconds = 120;
  /// > 0: each row also reports its time to this test accuracy: every mode
  /// evaluates every `eval_interval` versions (steps) and stops at the
  /// first evaluation that reaches it (launch's --target_accuracy).
  /// Defaults: 0 (none), 100.
  double target_accuracy = 0;
  int64_t eval_interval = 100;
  /// Where a temporary directory (checkpoints, captured output) is made and
  /// removed afterwards. Default: "/tmp".
  std::string scratch_dir = "/tmp";
  /// Receives one line as each mode starts; nullptr: none. Borrowed for
  /// the call.
  std::ostream* progress = nullptr;
};

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
///   sync, async: compression, pull_compression, bytes_per_step (a
///     worker's push plus pull, bytes) and bytes_pushed_per_step;
///   with a target: target_accuracy, time_to_target_seconds (sync, async:
///     the summary's, from the first worker joining until the version that
///     reached it was made; single: training seconds until that step) and
///     steps_to_target, both null when not reached.
/// Errors: kInvalidArgument for bad options or a run that exits 2 (bad
/// input, e.g. no data set); TrainLocally's errors for single; kIOError
/// when a child cannot start or fails, with its error message.
Result<nlohmann::json> RunTrainBench(const TrainBenchOptions& options);

}  // namespace pstrain::bench
