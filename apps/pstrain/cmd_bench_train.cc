// pstrain bench train: one model (or several) trained single, sync and
// async, compared in a table or one JSON document.

#include <limits.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "apps/pstrain/bench_subcommands.h"
#include "apps/pstrain/flags.h"
#include "apps/pstrain/job_flags.h"
#include "bench/machine_info.h"
#include "bench/table.h"
#include "bench/train_bench.h"
#include "cluster/launcher.h"
#include "ps/job/job_spec.h"

namespace pstrain::apps {

namespace {

using nlohmann::json;

struct TrainFlags {
  /// The job flags of launch, less kBenchTrainOwnFields.
  JobFlags job;
  bench::TrainBenchOptions options;
  bool json = false;
};

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "pstrain";
}

std::string JoinedModels(const bench::TrainBenchOptions& o) {
  std::string text;
  for (const std::string& m : o.models)
    text += (text.empty() ? "" : ",") + m;
  return text;
}

std::string Percent(double part, double whole) {
  return whole > 0 ? bench::FixedDecimals(100 * part / whole, 0) : "-";
}

// A row's name: its mode, and of several models or placements, which
// ("sync net_scripted.pt", "async server").
std::string RowName(const bench::TrainBenchOptions& o, const json& r) {
  std::string name = r.value("mode", "");
  if (o.models.size() > 1)
    name += " " + r.value("model", "");
  if (o.placements.size() > 1 && name.rfind("single", 0))
    name += " " + r.value("placement", "");
  if (o.transports.size() > 1 && name.rfind("single", 0))
    name += " " + r.value("transport", "");
  if (o.replicas.size() > 1 && name.rfind("single", 0))
    name += " replicas " + std::to_string(r.value("replicas", 0));
  return name;
}

// "0.8789", or over several seeds "0.8789 +- 0.0021" (mean, sd).
std::string Accuracy(const json& r) {
  std::string text = bench::FixedDecimals(Number(r, "test_accuracy"), 4);
  const json sd = r.value("test_accuracy_sd", json());
  if (sd.is_number())
    text += " +- " + bench::FixedDecimals(sd.get<double>(), 4);
  return text;
}

bench::TableRow TrainRow(const bench::TrainBenchOptions& o, const json& r) {
  double step = Number(r, "seconds_per_step");
  bench::TableRow row = {
      RowName(o, r),
      bench::FixedDecimals(Number(r, "samples_per_second"), 0),
      bench::FixedDecimals(Number(r, "wall_seconds"), 2),
      bench::FixedDecimals(step, 4),
      Percent(Number(r, "compute_seconds_per_step"), step),
      Percent(Number(r, "communication_seconds_per_step"), step),
      Percent(Number(r, "waiting_seconds_per_step"), step),
      Accuracy(r),
      bench::FixedDecimals(Number(r, "speedup_over_single"), 2)};
  if (o.job.target_accuracy > 0)
    row.push_back(bench::FixedDecimals(Number(r, "time_to_target_seconds"), 1));
  return row;
}

void PrintTrainTable(const bench::TrainBenchOptions& o, const json& rows) {
  std::vector<bench::TableRow> table;
  std::vector<std::string> notes;
  for (const json& r : rows) {
    table.push_back(TrainRow(o, r));
    for (const json& n : r.value("notes", json::array())) {
      notes.push_back(r.value("mode", "") + ": " + n.get<std::string>());
    }
  }
  std::vector<std::string> header = {"mode",      "samples/s", "wall s",
                                     "s/step",    "compute %", "comm %",
                                     "waiting %", "test acc",  "speed-up"};
  if (o.job.target_accuracy > 0) {
    header.push_back("s to " + bench::FixedDecimals(o.job.target_accuracy, 2));
  }
  std::cout << "pstrain bench train: " << JoinedModels(o) << " on "
            << o.job.dataset << ", " << o.steps << " steps of "
            << o.job.batch_size
            << " samples per worker; sync and async: 1 server and "
            << o.world_size - 1 << " workers as processes of this machine; "
            << "s/step split per worker (means)\n\n"
            << bench::FormatTable(header, table);
  for (const std::string& n : notes)
    std::cout << "note: " << n << "\n";
}

// The job from its flags, with lstm_lm's defaults (ps::ApplyModelDefaults)
// when the first model is lstm_lm, then every run checked as launch checks
// its job.
Status CheckTrain(TrainFlags& f) {
  auto& o = f.options;
  if (o.models.empty() || o.placements.empty())
    return InvalidArgument("--model and --placement: expected one or more");
  f.job.spec.model = o.models.front();
  PS_RETURN_IF_ERROR(ReadJobFlags(&f.job));
  // Evaluations to find the time to the target; launch's 0 would only
  // evaluate at the end.
  if (f.job.spec.target_accuracy > 0 && !JobFlagGiven(f.job, "eval_interval"))
    f.job.spec.eval_interval = 100;
  o.job = f.job.spec;
  o.pstrain_exe = SelfExe();
  return bench::ValidateTrainBench(o);
}

int RunTrain(TrainFlags& f) {
  auto log = BenchLog(f.json);
  Status checked = CheckTrain(f);
  if (!checked.ok())
    return Fail(*log, checked);
  // The single process gets the whole machine, libtorch's and BLAS's
  // threads alike, as each process of launch gets its share.
  if (f.options.single_threads == 0) {
    f.options.single_threads = cluster::ThreadsPerProcess(1);
  }
  SetThreads(f.options.single_threads);
  f.options.progress = &std::cerr;
  auto rows = bench::RunTrainBench(f.options);
  if (!rows.ok())
    return Fail(*log, rows.status());
  if (f.json) {
    json doc = bench::BenchDocument();
    doc["train"] = *rows;
    std::cout << doc.dump(2) << std::endl;
  } else {
    PrintTrainTable(f.options, *rows);
  }
  return 0;
}

void AddTrainFlags(CLI::App* sub, TrainFlags* f) {
  auto& o = f->options;
  sub->add_option("--model", o.models,
                  "Models: launch's --model, several comma-separated, each "
                  "run in every mode (e.g. net,net_scripted.pt); the first "
                  "one's defaults apply (lstm_lm: --dataset text --optimizer "
                  "adam --lr 0.001)")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--placement", o.placements,
                  "sync, async: launch's --placement, worker or server; "
                  "worker,server: both")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--transport", o.transports,
                  "sync, async: launch's --transport, auto, tcp or shm; "
                  "tcp,shm: each")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "tcp", "shm"}));
  sub->add_option("--replicas", o.replicas,
                  "sync, async: launch's --replicas (at most --num_servers); "
                  "1,2: each")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--num_servers", o.num_servers,
                  "Servers of sync and async (ranks 0..num_servers-1)")
      ->capture_default_str()
      ->check(CLI::Range(1, 63));
  sub->add_option("--modes", o.modes, "Rows: single, sync, async")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"single", "sync", "async"}));
  sub->add_option("--steps,--max_steps", o.steps,
                  "Steps per worker and of single (the job's max_steps and "
                  "epochs)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--seeds", o.seeds,
                  "Runs of each mode, with seeds --seed, --seed + 1, ...; a "
                  "row gives their means, and the accuracy's standard "
                  "deviation")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--device", o.device,
                  "The workers' and the single process's device: cpu, cuda or "
                  "cuda:i")
      ->capture_default_str();
  sub->add_option("--world_size", o.world_size,
                  "Processes of sync and async: --num_servers servers + "
                  "workers")
      ->capture_default_str()
      ->check(CLI::Range(2, 64));
  sub->add_option("--single_batch_size", o.single_batch_size,
                  "Samples per step of single (0: --batch_size; workers x "
                  "--batch_size: the samples sync sees)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--data_dir", o.data_dir,
                  "Directory of the data set; default: Debian's");
  sub->add_option("--threads", o.single_threads,
                  "libtorch threads of the single process (0: all cores)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--timeout", o.timeout_seconds,
                  "Seconds a sync/async run may make no progress")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--json", f->json, "One JSON document on stdout");
  AddJobFlags(sub, &f->job, kBenchTrainOwnFields);
}

}  // namespace

const std::set<std::string> kBenchTrainOwnFields = {
    "model",  "placement",   "mode",      "max_steps",
    "epochs", "slice_bytes", "transport", "replicas"};

CheckedCommand SetupBenchTrainChecked(CLI::App* sub) {
  auto f = std::make_shared<TrainFlags>();
  AddTrainFlags(sub, f.get());
  return {[f] { return CheckTrain(*f); }, [f] { return RunTrain(*f); }};
}

RunFn SetupBenchTrain(CLI::App* sub) {
  return SetupBenchTrainChecked(sub).run;
}

}  // namespace pstrain::apps
