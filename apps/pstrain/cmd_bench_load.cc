// pstrain bench load: many connections pushing async against one server;
// every acknowledged push must be applied exactly once.

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "apps/pstrain/bench_subcommands.h"
#include "apps/pstrain/flags.h"
#include "bench/load_bench.h"
#include "bench/machine_info.h"
#include "bench/table.h"

namespace pstrain::apps {

namespace {

using nlohmann::json;

struct LoadFlags {
  bench::LoadBenchOptions options;
  bool json = false;
};

void AddLoadFlags(CLI::App* sub, LoadFlags* f) {
  auto& o = f->options;
  sub->add_option("--connections", o.connections,
                  "Worker connections, one thread each")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--bytes", o.bytes, "Bytes of gradient per push")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{4}, uint64_t{1} << 30));
  sub->add_option("--seconds", o.seconds, "How long every connection pushes")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--json", f->json, "One JSON document on stdout");
}

// Exit status 1 unless every acknowledged push was applied exactly once.
int RunLoad(const LoadFlags& f) {
  auto log = BenchLog(f.json);
  auto report = bench::RunLoadBench(f.options);
  if (!report.ok())
    return Fail(*log, report.status());
  const json result = bench::ToJson(*report);
  if (f.json) {
    json doc = bench::BenchDocument();
    doc["load"] = result;
    std::cout << doc.dump(2) << std::endl;
  } else {
    std::cout << "pstrain bench load: " << report->connections
              << " connections x " << bench::FormatSize(report->bytes)
              << " pushes, async, " << bench::FixedDecimals(report->seconds, 1)
              << " s over loopback\n"
              << "acknowledged " << report->acked_pushes << ", applied "
              << report->applied_pushes << ", server version "
              << report->server_version << ", refused "
              << report->refused_pushes << "; "
              << bench::FixedDecimals(Number(result, "pushes_per_second"), 0)
              << " pushes/s, "
              << bench::FixedDecimals(Number(result, "gbps"), 2)
              << " GB/s; peak RSS "
              << bench::FormatSize(report->rss_after_quarter)
              << " a quarter in, " << bench::FormatSize(report->peak_rss)
              << " at the end\n";
  }
  if (!report->exact()) {
    return Fail(
        *log, Status(StatusCode::kCorruption,
                     "bench load: " + std::to_string(report->acked_pushes) +
                         " pushes acknowledged but " +
                         std::to_string(report->applied_pushes) + " applied"));
  }
  return 0;
}

}  // namespace

RunFn SetupBenchLoad(CLI::App* sub) {
  auto f = std::make_shared<LoadFlags>();
  AddLoadFlags(sub, f.get());
  return [f] { return RunLoad(*f); };
}

}  // namespace pstrain::apps
