// pstrain bench data: how fast a data set's samples are read, decoded and
// transformed, per thread, beside the rate of reading the same files.

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "apps/pstrain/bench_subcommands.h"
#include "apps/pstrain/flags.h"
#include "bench/data_bench.h"
#include "bench/machine_info.h"
#include "bench/table.h"

namespace pstrain::apps {

namespace {

using nlohmann::json;

struct DataBenchFlags {
  bench::DataBenchOptions options;
  bool json = false;
};

void AddDataBenchFlags(CLI::App* sub, DataBenchFlags* f) {
  auto& o = f->options;
  sub->add_option("--dataset", o.dataset,
                  "fashion-mnist, mnist, cifar10 or imagefolder")
      ->capture_default_str();
  sub->add_option("--data_dir", o.data_dir,
                  "The data set's folder (imagefolder: DIR/train/<class>/ "
                  "and DIR/val/<class>/)");
  sub->add_option("--image_size", o.image_size,
                  "Side of the square crop, pixels (imagefolder)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  sub->add_option("--data_threads", o.threads,
                  "Threads that read, decode and transform")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--seconds", o.seconds, "How long each phase runs")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--samples", o.samples,
                  "Samples per phase instead of --seconds (0: use --seconds)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--files", o.files,
                  "Distinct files the read and decode phases cycle over")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--json", f->json, "One JSON document on stdout");
}

bench::TableRow Row(const json& r, const char* phase) {
  if (!r.contains(phase))
    return {};
  const json& p = r[phase];
  return {phase, std::to_string(p.value("images", int64_t{0})),
          bench::FixedDecimals(Number(p, "seconds"), 2),
          bench::FixedDecimals(Number(p, "images_per_second"), 1),
          bench::FixedDecimals(Number(p, "images_per_second_per_thread"), 1)};
}

int RunDataBench(const DataBenchFlags& f) {
  auto log = BenchLog(f.json);
  auto result = bench::RunDataBench(f.options);
  if (!result.ok())
    return Fail(*log, result.status());
  if (f.json) {
    json doc = bench::BenchDocument();
    doc["data"] = *result;
    std::cout << doc.dump(2) << std::endl;
    return 0;
  }
  std::vector<bench::TableRow> rows;
  for (const char* phase : {"read", "decode", "train", "eval"}) {
    bench::TableRow row = Row(*result, phase);
    if (!row.empty())
      rows.push_back(row);
  }
  std::cout << "pstrain bench data: " << f.options.dataset << ", "
            << f.options.threads << " thread(s); read is the limit (the same "
            << "files from the page cache, one thread)\n\n"
            << bench::FormatTable(
                   {"phase", "images", "seconds", "images/s", "per thread"},
                   rows);
  return 0;
}

}  // namespace

RunFn SetupBenchData(CLI::App* sub) {
  auto f = std::make_shared<DataBenchFlags>();
  AddDataBenchFlags(sub, f.get());
  return [f] { return RunDataBench(*f); };
}

}  // namespace pstrain::apps
