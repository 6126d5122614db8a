// pstrain bench: `wire` measures push/pull through the real server and
// clients against the loopback limits measured in the same run; `train`
// trains one model in each mode and compares them. Each prints a table, or
// with --json one document {"schema", "machine", "build", "wire"|"train"}.

#include <limits.h>
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <map>
#include <memory>

#include "apps/pstrain/bench_subcommands.h"
#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"
#include "bench/machine_info.h"
#include "bench/table.h"
#include "bench/train_bench.h"
#include "bench/wire_bench.h"
#include "cluster/launcher.h"
#include "ps/job_spec.h"

namespace pstrain::apps {

namespace {

using nlohmann::json;

struct WireFlags {
  std::string sizes;  // "" = WireBenchOptions' default sizes
  bench::WireBenchOptions options;
  bool json = false;
};

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

void PrintWireTable(const json& result) {
  std::vector<bench::TableRow> rows;
  for (const json& c : result.value("cases", json::array())) {
    rows.push_back(
        {c.value("op", ""), bench::FormatSize(c.value("bytes", uint64_t{0})),
         std::to_string(c.value("workers", 0)),
         bench::FixedDecimals(Number(c, "median_us"), 1),
         bench::FixedDecimals(Number(c, "p99_us"), 1),
         bench::FixedDecimals(Number(c, "gbps"), 2),
         bench::FixedDecimals(Number(c, "limit_gbps"), 2),
         bench::FixedDecimals(100 * Number(c, "fraction_of_limit"), 0),
         bench::FixedDecimals(Number(c, "memcpy_gbps"), 2)});
  }
  std::cout
      << "pstrain bench wire: the server and the workers are threads of this "
         "process over loopback TCP; GB/s = 1e9 bytes/s (push_pull counts "
         "the bytes both ways); limit = a plain TCP socket pair streaming "
         "the same size one way\n\n"
      << bench::FormatTable({"op", "size", "workers", "median us", "p99 us",
                             "GB/s", "limit GB/s", "% of limit", "memcpy GB/s"},
                            rows);
  std::vector<bench::TableRow> codecs;
  for (const json& c : result.value("codecs", json::array())) {
    codecs.push_back({c.value("codec", ""),
                      bench::FixedDecimals(Number(c, "fraction"), 4),
                      bench::FixedDecimals(Number(c, "encode_gbps"), 2),
                      bench::FixedDecimals(Number(c, "validate_gbps"), 2),
                      bench::FixedDecimals(Number(c, "decode_gbps"), 2),
                      bench::FixedDecimals(Number(c, "memcpy_gbps"), 2)});
  }
  if (!codecs.empty()) {
    std::cout << "\n--compression codecs on one thread; GB/s of float32 "
                 "bytes in (encode) or out (decode-add)\n\n"
              << bench::FormatTable(
                     {"codec", "bytes/raw", "encode GB/s", "validate GB/s",
                      "decode GB/s", "memcpy GB/s"},
                     codecs);
  }
}

int RunWire(WireFlags& f) {
  auto log = BenchLog(f.json);
  if (!f.sizes.empty()) {
    auto sizes = bench::ParseSizes(f.sizes);
    if (!sizes.ok())
      return Fail(*log, sizes.status().WithContext("--sizes"));
    f.options.sizes = *sizes;
  }
  auto result = bench::RunWireBench(f.options);
  if (!result.ok())
    return Fail(*log, result.status());
  if (f.json) {
    json doc = bench::BenchDocument();
    doc["wire"] = *result;
    std::cout << doc.dump(2) << std::endl;
  } else {
    PrintWireTable(*result);
  }
  return 0;
}

// `several`: of several models, so the mode is named with its model
// ("sync net_scripted.pt").
bench::TableRow TrainRow(const json& r, bool target, bool several) {
  double step = Number(r, "seconds_per_step");
  bench::TableRow row = {
      several ? r.value("mode", "") + " " + r.value("model", "")
              : r.value("mode", ""),
      bench::FixedDecimals(Number(r, "samples_per_second"), 0),
      bench::FixedDecimals(Number(r, "wall_seconds"), 2),
      bench::FixedDecimals(step, 4),
      Percent(Number(r, "compute_seconds_per_step"), step),
      Percent(Number(r, "communication_seconds_per_step"), step),
      Percent(Number(r, "waiting_seconds_per_step"), step),
      bench::FixedDecimals(Number(r, "test_accuracy"), 4),
      bench::FixedDecimals(Number(r, "speedup_over_single"), 2)};
  if (target)
    row.push_back(bench::FixedDecimals(Number(r, "time_to_target_seconds"), 1));
  return row;
}

void PrintTrainTable(const bench::TrainBenchOptions& o, const json& rows) {
  std::vector<bench::TableRow> table;
  std::vector<std::string> notes;
  for (const json& r : rows) {
    table.push_back(TrainRow(r, o.target_accuracy > 0,
                             o.model.find(',') != std::string::npos));
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

void AddWireFlags(CLI::App* sub, WireFlags* f) {
  sub->add_option(
      "--sizes", f->sizes,
      "Message sizes: 4KiB,64KiB,1MiB,4.8MiB,16MiB,64MiB (KiB, MiB, GiB "
      "or bytes); default: those");
  sub->add_option("--workers", f->options.workers, "Worker counts")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--op", f->options.ops, "Operations: push, pull, push_pull")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"push", "pull", "push_pull"}));
  sub->add_option("--seconds", f->options.seconds_per_case,
                  "Seconds measured per case, after warm-up")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--codecs", f->options.codecs,
                  "Codecs (as the job's compression flag names them) whose "
                  "encode, validate and decode "
                  "GB/s are measured (none: --codecs '')")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--codec_elements", f->options.codec_elements,
                  "float32 elements of the tensor the codecs code")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--json", f->json, "One JSON document on stdout");
}

void AddTrainFlags(CLI::App* sub, TrainFlags* f) {
  auto& o = f->options;
  sub->add_option("--model", o.model,
                  "net, convnet, mlp, resnet18, resnet34, resnet50 or lstm_lm "
                  "(defaults: --dataset text --optimizer adam --lr 0.001), or "
                  "a TorchScript file; several, comma-separated, each run in "
                  "every mode (e.g. net,net_scripted.pt)")
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

std::unique_ptr<report::EventLog> BenchLog(bool json) {
  report::EventLogOptions o;
  o.json = json;
  return std::make_unique<report::EventLog>(o);
}

double Number(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : std::nan("");
}

RunFn SetupBench(CLI::App* sub) {
  sub->require_subcommand(1);
  auto wire = std::make_shared<WireFlags>();
  CLI::App* wire_sub = sub->add_subcommand(
      "wire",
      "Push and pull through the real server and clients, against the "
      "loopback TCP and memcpy limits");
  AddWireFlags(wire_sub, wire.get());
  auto train = std::make_shared<TrainFlags>();
  CLI::App* train_sub = sub->add_subcommand(
      "train",
      "Train one model single, sync and async; compare speed and accuracy");
  AddTrainFlags(train_sub, train.get());
  CLI::App* load_sub = sub->add_subcommand(
      "load",
      "Many connections pushing async against one server; checks that every "
      "push is applied exactly once and reports peak memory");
  RunFn run_load = SetupBenchLoad(load_sub);
  CLI::App* eval_sub = sub->add_subcommand(
      "eval",
      "Score a model's test set at each batch size and thread count with the "
      "evaluator serve, eval and launch use");
  RunFn run_eval = SetupBenchEval(eval_sub);
  CLI::App* data_sub = sub->add_subcommand(
      "data",
      "Read, decode and transform a data set's samples (imagefolder, "
      "cifar10, ...) on threads; images per second per thread");
  RunFn run_data = SetupBenchData(data_sub);
  return [=] {
    if (data_sub->parsed())
      return run_data();
    if (eval_sub->parsed())
      return run_eval();
    if (load_sub->parsed())
      return run_load();
    if (wire_sub->parsed())
      return RunWire(*wire);
    if (train_sub->parsed())
      return RunTrain(*train);
    return 2;
  };
}

}  // namespace pstrain::apps
