// pstrain bench eval: scores a model's test set at each batch size and
// thread count with the evaluator that serve, eval and launch use.

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "apps/pstrain/bench_subcommands.h"
#include "apps/pstrain/flags.h"
#include "bench/eval_bench.h"
#include "bench/machine_info.h"
#include "bench/table.h"

namespace pstrain::apps {

namespace {

using nlohmann::json;

struct EvalBenchFlags {
  bench::EvalBenchOptions options;
  bool json = false;
};

void AddEvalBenchFlags(CLI::App* sub, EvalBenchFlags* f) {
  auto& o = f->options;
  sub->add_option("--model", o.model, "net, convnet or mlp")
      ->capture_default_str();
  sub->add_option("--dataset", o.dataset, "fashion-mnist or mnist")
      ->capture_default_str();
  sub->add_option("--data_dir", o.data_dir,
                  "Directory of the data set's IDX files; default: Debian's");
  sub->add_option("--checkpoint", o.checkpoint,
                  "A saved model to score; default: the model as seeded");
  sub->add_option("--batch_sizes", o.batch_sizes,
                  "Samples per forward, one row each")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--threads", o.threads,
                  "Thread counts, one set of rows each (0: all cores)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--repeats", o.repeats, "Passes per row; the fastest counts")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--json", f->json, "One JSON document on stdout");
}

int RunEvalBench(const EvalBenchFlags& f) {
  auto log = BenchLog(f.json);
  auto result = bench::RunEvalBench(f.options);
  if (!result.ok())
    return Fail(*log, result.status());
  if (f.json) {
    json doc = bench::BenchDocument();
    doc["eval"] = *result;
    std::cout << doc.dump(2) << std::endl;
    return 0;
  }
  std::vector<bench::TableRow> rows;
  for (const json& r : (*result)["rows"]) {
    rows.push_back({std::to_string(r.value("threads", 0)),
                    std::to_string(r.value("batch_size", int64_t{0})),
                    bench::FixedDecimals(Number(r, "seconds"), 3),
                    bench::FixedDecimals(Number(r, "images_per_second"), 0),
                    bench::FixedDecimals(Number(r, "vs_default"), 2),
                    bench::FixedDecimals(Number(r, "test_accuracy"), 4)});
  }
  std::cout << "pstrain bench eval: " << f.options.model << " scores the "
            << (*result)["samples"].get<int64_t>() << " test images of "
            << f.options.dataset << "; the default batch is "
            << (*result)["default_batch_size"].get<int64_t>() << "\n\n"
            << bench::FormatTable({"threads", "batch", "seconds", "images/s",
                                   "vs default", "test acc"},
                                  rows);
  return 0;
}

}  // namespace

RunFn SetupBenchEval(CLI::App* sub) {
  auto f = std::make_shared<EvalBenchFlags>();
  AddEvalBenchFlags(sub, f.get());
  return [f] { return RunEvalBench(*f); };
}

}  // namespace pstrain::apps
