// pstrain bench train: one model (or several) trained single, sync and
// async, compared in a table or one JSON document.

#include <limits.h>
#include <unistd.h>

#include <iostream>
#include <map>
#include <memory>

#include "apps/pstrain/bench_subcommands.h"
#include "apps/pstrain/flags.h"
#include "bench/machine_info.h"
#include "bench/table.h"
#include "bench/train_bench.h"
#include "cluster/launcher.h"
#include "ps/job_spec.h"

namespace pstrain::apps {

namespace {

using nlohmann::json;

struct TrainFlags {
  bench::TrainBenchOptions options;
  bool json = false;
  /// The options a model may default otherwise (ps::ApplyModelDefaults).
  std::map<std::string, const CLI::Option*> defaulted;
};

// lstm_lm's own defaults for --dataset, --optimizer and --lr not given.
void ApplyModelDefaults(TrainFlags* f) {
  ps::JobSpec spec;
  auto& o = f->options;
  spec.model = o.model;
  spec.dataset = o.dataset;
  spec.optimizer = o.optimizer;
  spec.lr = o.lr;
  ps::ApplyModelDefaults(
      [f](const char* name) { return f->defaulted.at(name)->count() > 0; },
      &spec);
  o.dataset = spec.dataset;
  o.optimizer = spec.optimizer;
  o.lr = spec.lr;
}

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "pstrain";
}

std::string Percent(double part, double whole) {
  return whole > 0 ? bench::FixedDecimals(100 * part / whole, 0) : "-";
}

// A row's name: its mode, and of several models or placements, which
// ("sync net_scripted.pt", "async server").
std::string RowName(const bench::TrainBenchOptions& o, const json& r) {
  std::string name = r.value("mode", "");
  if (o.model.find(',') != std::string::npos)
    name += " " + r.value("model", "");
  if (o.placement.find(',') != std::string::npos && name.rfind("single", 0))
    name += " " + r.value("placement", "");
  return name;
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
      bench::FixedDecimals(Number(r, "test_accuracy"), 4),
      bench::FixedDecimals(Number(r, "speedup_over_single"), 2)};
  if (o.target_accuracy > 0)
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
  if (o.target_accuracy > 0) {
    header.push_back("s to " + bench::FixedDecimals(o.target_accuracy, 2));
  }
  std::cout << "pstrain bench train: " << o.model << " on " << o.dataset << ", "
            << o.steps << " steps of " << o.batch_size
            << " samples per worker; sync and async: 1 server and "
            << o.world_size - 1 << " workers as processes of this machine; "
            << "s/step split per worker (means)\n\n"
            << bench::FormatTable(header, table);
  for (const std::string& n : notes)
    std::cout << "note: " << n << "\n";
}

int RunTrain(TrainFlags& f) {
  auto log = BenchLog(f.json);
  ApplyModelDefaults(&f);
  f.options.pstrain_exe = SelfExe();
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
  sub->add_option("--model", o.model,
                  "net, convnet, mlp, resnet18, resnet34, resnet50 or lstm_lm "
                  "(defaults: --dataset text --optimizer adam --lr 0.001), or "
                  "a TorchScript file; several, comma-separated, each run in "
                  "every mode (e.g. net,net_scripted.pt)")
      ->capture_default_str();
  sub->add_option("--placement", o.placement,
                  "sync, async: worker (workers push gradients) or server (the "
                  "server runs the model on the workers' batches); "
                  "worker,server: both")
      ->capture_default_str();
  sub->add_option("--device", o.device,
                  "The workers' and the single process's device: cpu, cuda or "
                  "cuda:i")
      ->capture_default_str();
  sub->add_option("--num_gpus", o.num_gpus,
                  "GPUs of the server's model (launch's --num_gpus)")
      ->capture_default_str();
  sub->add_option("--loss", o.loss,
                  "A TorchScript model's loss: cross_entropy, nll or mse")
      ->capture_default_str()
      ->check(CLI::IsMember({"cross_entropy", "nll", "mse"}));
  f->defaulted["dataset"] =
      sub->add_option("--dataset", o.dataset,
                      "fashion-mnist, mnist, cifar10, imagefolder or text")
          ->capture_default_str();
  f->defaulted["optimizer"] =
      sub->add_option("--optimizer", o.optimizer,
                      "sgd, adam, adamw, adagrad or rmsprop")
          ->capture_default_str();
  sub->add_option("--clip_grad_norm", o.clip_grad_norm,
                  "Clip the gradient to this L2 norm (0: off)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--vocab_size", o.vocab_size,
                  "text: words the vocabulary keeps")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--bptt", o.bptt, "text: tokens per BPTT window")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--embed_dim", o.embed_dim, "lstm_lm: embedding size")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--hidden_dim", o.hidden_dim, "lstm_lm: LSTM hidden size")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--num_layers", o.num_layers, "lstm_lm: LSTM layers")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--dropout", o.dropout, "lstm_lm: dropout")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.999));
  sub->add_flag("--tie_weights", o.tie_weights,
                "lstm_lm: the decoder's weight is the embedding's");
  sub->add_flag("--sparse_embeddings", o.sparse_embeddings,
                "Embedding rows travel alone (launch's flag); "
                "--sparse_embeddings=false: whole tables")
      ->capture_default_str();
  sub->add_option("--compression", o.compression,
                  "sync, async: the job's push codec (none, fp16, bf16, "
                  "int8, topk:R, onebit)")
      ->capture_default_str();
  sub->add_option("--pull_compression", o.pull_compression,
                  "sync, async: none, fp16 or bf16")
      ->capture_default_str();
  sub->add_option("--image_size", o.image_size,
                  "imagefolder: side of the crop, pixels")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--data_threads", o.data_threads,
                  "Threads of each worker that read and augment batches")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--modes", o.modes, "Rows: single, sync, async")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"single", "sync", "async"}));
  sub->add_option("--world_size", o.world_size,
                  "Processes of sync and async: 1 server + workers")
      ->capture_default_str()
      ->check(CLI::Range(2, 64));
  sub->add_option("--steps", o.steps, "Steps per worker")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--batch_size", o.batch_size, "Samples per worker per step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--single_batch_size", o.single_batch_size,
                  "Samples per step of single (0: --batch_size; workers x "
                  "--batch_size: the samples sync sees)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--data_dir", o.data_dir,
                  "Directory of the data set; default: Debian's");
  f->defaulted["lr"] = sub->add_option("--lr", o.lr, "Learning rate")
                           ->capture_default_str()
                           ->check(CLI::PositiveNumber);
  sub->add_option("--momentum", o.momentum, "SGD momentum")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--lr_schedule", o.lr_schedule,
                  "auto (cosine over --steps for resnets, else constant), "
                  "constant, step:N:GAMMA or cosine")
      ->capture_default_str();
  sub->add_option("--seed", o.seed, "Seed of the model, shuffle and dropout")
      ->capture_default_str();
  sub->add_option("--threads", o.single_threads,
                  "libtorch threads of the single process (0: all cores)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option(
         "--target_accuracy", o.target_accuracy,
         "Also report each mode's time to this test accuracy, evaluating "
         "every --eval_interval steps and stopping there (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--eval_interval", o.eval_interval,
                  "With --target_accuracy: steps between evaluations")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--timeout", o.timeout_seconds,
                  "Seconds a sync/async run may make no progress")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--json", f->json, "One JSON document on stdout");
}

}  // namespace

RunFn SetupBenchTrain(CLI::App* sub) {
  auto f = std::make_shared<TrainFlags>();
  AddTrainFlags(sub, f.get());
  return [f] { return RunTrain(*f); };
}

}  // namespace pstrain::apps
