#include "bench/train_bench.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>

#include "bench/launch_output.h"
#include "bench/scratch_dir.h"
#include "bench/seed_runs.h"
#include "cluster/launcher.h"
#include "ps/job/job_flag_args.h"
#include "util/resources.h"
#include "worker/device.h"
#include "worker/local_trainer.h"

namespace pstrain::bench {

namespace {

using nlohmann::json;

// The job of the run of `model` in `placement` and `mode` (single: as
// sync's, whose computation it is).
ps::JobSpec RunJob(const TrainBenchOptions& o, const std::string& model,
                   const std::string& placement, const std::string& mode,
                   const std::string& transport, int replicas) {
  ps::JobSpec job = o.job;
  job.model = model;
  job.placement = placement;
  job.transport = transport;
  job.replicas = replicas;
  job.mode = mode == "async" ? ps::Mode::kAsync : ps::Mode::kSync;
  // epochs = steps: every epoch has at least one step, so max_steps ends
  // the run even when the data set is small.
  job.max_steps = o.steps;
  job.epochs = o.steps;
  job.world_size = o.world_size;
  job.num_servers = o.num_servers;
  return job;
}

// Each run's job as launch would check it.
Status ValidateJobs(const TrainBenchOptions& o) {
  for (const std::string& model : o.models) {
    for (const std::string& placement : o.placements) {
      for (const std::string& transport : o.transports) {
        for (int replicas : o.replicas) {
          for (const std::string& mode : o.modes)
            PS_RETURN_IF_ERROR(ps::ValidateJobSpec(
                RunJob(o, model, placement, mode, transport, replicas)));
        }
      }
    }
  }
  const bool single = std::count(o.modes.begin(), o.modes.end(), "single") > 0;
  if (single && o.job.eval_seconds > 0) {
    return InvalidArgument("--eval_interval " +
                           ps::job_table::kEvalIntervalText.format(o.job) +
                           ": single evaluates every N steps, not seconds");
  }
  return Status::Ok();
}

}  // namespace

Status ValidateTrainBench(const TrainBenchOptions& o) {
  for (const std::string& m : o.modes) {
    if (m != "single" && m != "sync" && m != "async") {
      return InvalidArgument("mode '" + m +
                             "': expected single, sync or async");
    }
    if (m != "single" && o.pstrain_exe.empty()) {
      return InvalidArgument("mode " + m +
                             " needs the pstrain binary to launch");
    }
  }
  if (o.modes.empty() || o.models.empty() || o.placements.empty() ||
      o.transports.empty() || o.replicas.empty())
    return InvalidArgument(
        "no mode, model, placement, transport or replicas to run");
  if (o.num_servers < 1)
    return InvalidArgument("num_servers must be >= 1");
  if (o.world_size < o.num_servers + 1)
    return InvalidArgument("world_size must be >= num_servers + 1");
  if (o.steps < 1)
    return InvalidArgument("steps must be >= 1");
  if (o.seeds < 1)
    return InvalidArgument("seeds must be >= 1");
  if (o.single_batch_size < 0)
    return InvalidArgument("single_batch_size must be >= 0");
  if (o.single_threads < 0)
    return InvalidArgument("threads must be >= 0");
  PS_RETURN_IF_ERROR(worker::ParseDevice(o.device).status());
  return ValidateJobs(o);
}

namespace {

int64_t SingleBatchSize(const TrainBenchOptions& o) {
  return o.single_batch_size > 0 ? o.single_batch_size : o.job.batch_size;
}

// The fields every row has, from the options and the run's job.
json RowBase(const TrainBenchOptions& o, const ps::JobSpec& job,
             const std::string& mode) {
  return {{"mode", mode},
          {"model", job.model},
          {"placement", mode == "single" ? "none" : job.placement},
          {"transport", mode == "single" ? "none" : job.transport},
          {"num_servers", mode == "single" ? 0 : job.num_servers},
          {"replicas", mode == "single" ? 0 : job.replicas},
          {"device", o.device},
          {"dataset", job.dataset},
          {"batch_size", job.batch_size},
          {"steps", o.steps},
          {"lr", job.lr},
          {"momentum", job.momentum},
          {"lr_schedule", job.lr_schedule},
          {"seed", job.seed},
          {"notes", json::array()}};
}

// Seconds per step and its split; `compute` etc. are seconds per step.
void SetSplit(json* row, double compute, double communication, double waiting) {
  (*row)["seconds_per_step"] = compute + communication + waiting;
  (*row)["compute_seconds_per_step"] = compute;
  (*row)["communication_seconds_per_step"] = communication;
  (*row)["waiting_seconds_per_step"] = waiting;
}

Result<json> RunSingle(const TrainBenchOptions& o, const ps::JobSpec& job) {
  worker::LocalTrainOptions l;
  l.job = job;
  l.job.batch_size = SingleBatchSize(o);
  l.data_dir = o.data_dir;
  l.device = o.device;
  l.steps = o.steps;
  // The whole machine, as launch splits it between its processes.
  l.threads =
      o.single_threads > 0 ? o.single_threads : cluster::ThreadsPerProcess(1);
  PS_ASSIGN_OR_RETURN(worker::LocalRunStats s, worker::TrainLocally(l));
  json row = RowBase(o, job, "single");
  if (job.compression != "none" || job.pull_compression != "none")
    row["notes"].push_back("single has no wire: nothing was compressed");
  row["batch_size"] = l.job.batch_size;
  row["processes"] = 1;
  row["workers"] = 1;
  row["threads_per_process"] = s.threads;
  row["samples"] = s.samples;
  row["wall_seconds"] = s.wall_seconds;
  row["samples_per_second"] = s.samples_per_second;
  SetSplit(&row, s.wall_seconds / s.steps, 0, 0);
  row["test_accuracy"] = s.test_accuracy;
  row["test_loss"] = s.test_loss;
  if (s.test_perplexity > 0)
    row["test_perplexity"] = s.test_perplexity;
  row["process_seconds"] = nullptr;
  row["peak_rss_bytes"] = {{"process", PeakRssBytes()}};
  if (job.target_accuracy > 0) {
    const bool reached = s.steps_to_target > 0;
    row["target_accuracy"] = job.target_accuracy;
    row["time_to_target_seconds"] =
        reached ? json(s.time_to_target_seconds) : json(nullptr);
    row["steps_to_target"] = reached ? json(s.steps_to_target) : json(nullptr);
  }
  return row;
}

// `pstrain launch` of the run whose job is `job`: the job's flags as rank
// 0's (ps::JobFlagArgs), the bench's own, and JSON Lines on stdout.
std::vector<std::string> LaunchArgs(const TrainBenchOptions& o,
                                    const ps::JobSpec& job,
                                    const std::string& checkpoint) {
  std::vector<std::string> a = {
      o.pstrain_exe,   "launch",
      "--world_size",  std::to_string(o.world_size),
      "--num_servers", std::to_string(o.num_servers),
      "--master_addr", "127.0.0.1",
      "--master_port", "0",
      "--timeout",     ps::ExactText(o.timeout_seconds),
      "--checkpoint",  checkpoint,
      "--device",      o.device,
      "--json"};
  const std::vector<std::string> flags = ps::JobFlagArgs(job);
  a.insert(a.end(), flags.begin(), flags.end());
  if (!o.data_dir.empty())
    a.insert(a.end(), {"--data_dir", o.data_dir});
  return a;
}

double Mean(const std::vector<json>& workers, const char* field) {
  double sum = 0;
  for (const json& w : workers)
    sum += w.value(field, 0.0);
  return workers.empty() ? 0.0 : sum / workers.size();
}

// The largest `field` of `workers`; null when none has it.
json MaxOf(const std::vector<json>& workers, const char* field) {
  json max;
  for (const json& w : workers) {
    if (w.contains(field) && (max.is_null() || w[field] > max))
      max = w[field];
  }
  return max;
}

// A worker's bytes on the wire per step (push plus pull, the mean of the
// workers) and, with row-sparse keys, their rows and the bytes the whole
// tables would have added (share/doc/statistics.md).
void SetWire(json* row, const std::vector<json>& workers, double steps) {
  (*row)["bytes_per_step"] =
      (Mean(workers, "bytes_pushed") + Mean(workers, "bytes_pulled")) / steps;
  (*row)["bytes_pushed_per_step"] = Mean(workers, "bytes_pushed") / steps;
  if (Mean(workers, "sparse_rows_pushed_per_step") <= 0)
    return;
  (*row)["sparse_rows"] = {
      {"pushed_per_step", Mean(workers, "sparse_rows_pushed_per_step")},
      {"pulled_per_step", Mean(workers, "sparse_rows_pulled_per_step")},
      {"unique_id_ratio", Mean(workers, "unique_id_ratio")},
      {"bytes_saved_per_step", Mean(workers, "sparse_bytes_saved") / steps}};
}

// Fills a row from a launch's summaries.
json LaunchRow(const TrainBenchOptions& o, const ps::JobSpec& job,
               const std::string& mode, const LaunchOutput& out,
               double process_seconds) {
  const json& s = out.server;
  json row = RowBase(o, job, mode);
  row["processes"] = o.world_size;
  row["workers"] = o.world_size - o.num_servers;
  row["threads_per_process"] = cluster::ThreadsPerProcess(o.world_size);
  row["compression"] = job.compression;
  row["pull_compression"] = job.pull_compression;
  row["samples"] = static_cast<int64_t>(std::llround(s.value("samples", 0.0)));
  row["wall_seconds"] = s.value("wall_seconds", 0.0);
  row["samples_per_second"] = s.value("samples_per_second", 0.0);
  // The server's summary holds the per-worker means, split so that the
  // parts add up: a worker's round trips less the time the server held its
  // reply for the others (waiting). The workers' own summaries give steps.
  double steps = out.workers.empty() ? o.steps : Mean(out.workers, "steps");
  steps = steps > 0 ? steps : 1;
  if (!s.contains("waiting_seconds")) {
    row["notes"].push_back(
        "waiting_seconds not reported by this pstrain; shown as 0");
  }
  SetSplit(&row, s.value("compute_seconds", 0.0) / steps,
           s.value("communication_seconds", 0.0) / steps,
           s.value("waiting_seconds", 0.0) / steps);
  row["steps"] = static_cast<int64_t>(std::llround(steps));
  row["peak_rss_bytes"] = {{"server", s.value("peak_rss_bytes", json())},
                           {"worker", MaxOf(out.workers, "peak_rss_bytes")}};
  SetWire(&row, out.workers, steps);
  // --replicas: rank 0's shard to its standbys; each server sends its own.
  row["standby_bytes_per_step_rank0"] = s.value("standby_bytes", 0.0) / steps;
  row["test_accuracy"] = s.value("test_accuracy", 0.0);
  row["test_loss"] = s.value("test_loss", 0.0);
  if (s.contains("test_perplexity"))
    row["test_perplexity"] = s["test_perplexity"];
  row["process_seconds"] = process_seconds;
  if (job.target_accuracy > 0) {
    row["target_accuracy"] = job.target_accuracy;
    row["time_to_target_seconds"] =
        s.value("time_to_target_seconds", json(nullptr));
    row["steps_to_target"] = s.value("steps_to_target", json(nullptr));
  }
  return row;
}

Result<json> RunLaunch(const TrainBenchOptions& o, const ps::JobSpec& job,
                       const std::string& mode, const std::string& dir) {
  std::ostringstream out, err;
  cluster::LaunchOptions l;
  l.children.push_back(
      {LaunchArgs(o, job, dir + "/" + mode + ".pt"), "launch"});
  l.prefix_stdout = false;
  l.out = &out;
  l.err = &err;
  auto start = std::chrono::steady_clock::now();
  PS_ASSIGN_OR_RETURN(int exit_code, cluster::RunChildren(l));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  LaunchOutput parsed = ParseLaunchOutput(out.str());
  if (exit_code != 0 || parsed.server.is_null()) {
    std::string why = parsed.error.empty() ? LastLine(err.str()) : parsed.error;
    std::string message = "train " + mode +
                          ": pstrain launch exited with status " +
                          std::to_string(exit_code) + ": " + why;
    return exit_code == 2 ? InvalidArgument(message) : IOError(message);
  }
  return LaunchRow(o, job, mode, parsed, seconds);
}

void SetSpeedups(json* rows) {
  double single = 0;
  for (const json& r : *rows) {
    if (r["mode"] == "single")
      single = r["samples_per_second"].get<double>();
  }
  for (json& r : *rows) {
    double sps = r["samples_per_second"].get<double>();
    r["speedup_over_single"] = single > 0 ? json(sps / single) : json(nullptr);
  }
}

// The rows of `model` in `placement` over `transport`, each of `modes` in
// turn.
Result<json> RunModel(const TrainBenchOptions& o, const std::string& model,
                      const std::string& placement,
                      const std::string& transport, int replicas,
                      const std::vector<std::string>& modes,
                      const std::string& scratch) {
  json rows = json::array();
  for (const std::string& mode : modes) {
    if (o.progress) {
      *o.progress << "pstrain bench: train " << mode << ": " << model << ", "
                  << o.steps << " steps of "
                  << (mode == "single" ? SingleBatchSize(o) : o.job.batch_size)
                  << " samples"
                  << (mode == "single"
                          ? std::string(", one process")
                          : ", " +
                                std::to_string(o.world_size - o.num_servers) +
                                " workers")
                  << std::endl;
    }
    std::vector<json> runs;
    for (int i = 0; i < o.seeds; ++i) {
      ps::JobSpec job = RunJob(o, model, placement, mode, transport, replicas);
      job.seed = o.job.seed + static_cast<uint64_t>(i);
      PS_ASSIGN_OR_RETURN(json row, mode == "single"
                                        ? RunSingle(o, job)
                                        : RunLaunch(o, job, mode, scratch));
      runs.push_back(std::move(row));
    }
    rows.push_back(MeanOverSeeds(runs));
  }
  return rows;
}

}  // namespace

Result<json> RunTrainBench(const TrainBenchOptions& o) {
  PS_RETURN_IF_ERROR(ValidateTrainBench(o));
  PS_ASSIGN_OR_RETURN(std::unique_ptr<ScratchDir> dir,
                      ScratchDir::Make(o.scratch_dir));
  json rows = json::array();
  for (const std::string& model : o.models) {
    json model_rows = json::array();
    std::vector<std::string> modes = o.modes;
    for (const std::string& placement : o.placements) {
      for (const std::string& transport : o.transports) {
        for (int replicas : o.replicas) {
          PS_ASSIGN_OR_RETURN(json placed,
                              RunModel(o, model, placement, transport, replicas,
                                       modes, dir->path()));
          model_rows.insert(model_rows.end(), placed.begin(), placed.end());
          // single has no placement, transport or replicas: once per model
          modes.erase(std::remove(modes.begin(), modes.end(), "single"),
                      modes.end());
        }
      }
    }
    SetSpeedups(&model_rows);  // over the model's single row
    rows.insert(rows.end(), model_rows.begin(), model_rows.end());
  }
  return rows;
}

}  // namespace pstrain::bench
