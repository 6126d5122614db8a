// pstrain bench: `wire` measures push/pull through the real server and
// clients against the loopback limits measured in the same run; `train`
// (cmd_bench_train.cc) trains one model in each mode and compares them. Each
// prints a table, or with --json one document {"schema", "machine", "build",
// "wire"|"train"}.

#include <cmath>
#include <iostream>
#include <memory>

#include "apps/pstrain/bench_subcommands.h"
#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"
#include "bench/machine_info.h"
#include "bench/table.h"
#include "bench/wire_bench.h"

namespace pstrain::apps {

namespace {

using nlohmann::json;

struct WireFlags {
  std::string sizes;  // "" = WireBenchOptions' default sizes
  bench::WireBenchOptions options;
  bool json = false;
};

// "looks/yields/sleeps" per op of one shared-memory end; "-" over TCP.
std::string WaitsCell(const json& c, const char* end) {
  if (c.value("transport", "") != "shm")
    return "-";
  const json& w = c.value(end, json::object());
  return bench::FixedDecimals(Number(w, "looks_per_op"), 1) + "/" +
         bench::FixedDecimals(Number(w, "yields_per_op"), 1) + "/" +
         bench::FixedDecimals(Number(w, "sleeps_per_op"), 2);
}

void PrintWireTable(const json& result) {
  std::vector<bench::TableRow> rows;
  for (const json& c : result.value("cases", json::array())) {
    rows.push_back(
        {c.value("op", ""), bench::FormatSize(c.value("bytes", uint64_t{0})),
         std::to_string(c.value("workers", 0)), c.value("transport", ""),
         bench::FixedDecimals(Number(c, "median_us"), 1),
         bench::FixedDecimals(Number(c, "p99_us"), 1),
         bench::FixedDecimals(Number(c, "gbps"), 2),
         bench::FixedDecimals(Number(c, "limit_gbps"), 2),
         bench::FixedDecimals(100 * Number(c, "fraction_of_limit"), 0),
         bench::FixedDecimals(Number(c, "memcpy_gbps"), 2),
         bench::FixedDecimals(Number(c, "tcp_round_trip_us"), 1),
         WaitsCell(c, "worker_waits"), WaitsCell(c, "server_waits")});
  }
  std::cout
      << "pstrain bench wire: the server and the workers are threads of this "
         "process, over loopback TCP or shared memory; GB/s = 1e9 bytes/s "
         "(push_pull counts the bytes both ways); limit = a plain TCP socket "
         "pair streaming the same size one way; TCP RTT = its round trip; "
         "waits = looks/yields/sleeps per op of the shared-memory ends\n\n"
      << bench::FormatTable(
             {"op", "size", "workers", "transport", "median us", "p99 us",
              "GB/s", "limit GB/s", "% of limit", "memcpy GB/s", "TCP RTT us",
              "worker waits", "server waits"},
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
  sub->add_option("--transport", f->options.transports,
                  "Transports each case runs over: tcp, shm")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"tcp", "shm"}));
  sub->add_option("--mode", f->options.mode,
                  "The server's mode: async (each push stepped alone) or "
                  "sync (pushes summed as they come, then stepped; pull "
                  "and push_pull only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"async", "sync"}));
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
  CLI::App* train_sub = sub->add_subcommand(
      "train",
      "Train one model single, sync and async; compare speed and accuracy");
  RunFn run_train = SetupBenchTrain(train_sub);
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
      return run_train();
    return 2;
  };
}

}  // namespace pstrain::apps
