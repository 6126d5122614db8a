#pragma once
// The subcommands of `pstrain bench` that live in files of their own
// (cmd_bench_data.cc, cmd_bench_eval.cc, cmd_bench_load.cc,
// cmd_bench_train.cc), and what every
// bench subcommand shares. Each Setup adds its flags to `sub` and returns the
// function that runs it, as Command::setup does (command.h).

#include <memory>
#include <set>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "apps/pstrain/command.h"
#include "report/event_log.h"

namespace pstrain::apps {

/// `pstrain bench data`: read, decode and transform rates of a data set.
RunFn SetupBenchData(CLI::App* sub);
/// `pstrain bench eval`: the evaluator's speed at each batch size.
RunFn SetupBenchEval(CLI::App* sub);
/// `pstrain bench load`: many connections against one server.
RunFn SetupBenchLoad(CLI::App* sub);
/// `pstrain bench train`: one model or several in each mode.
RunFn SetupBenchTrain(CLI::App* sub);
CheckedCommand SetupBenchTrainChecked(CLI::App* sub);
/// The job fields that get no flag of the job table in bench train: it sets
/// them its own way (--model and --placement take lists, --modes the modes,
/// --steps max_steps and epochs), or they do nothing with its one server
/// (slice_bytes).
extern const std::set<std::string> kBenchTrainOwnFields;

/// The event log of a bench subcommand: errors, and JSON lines with --json.
std::unique_ptr<report::EventLog> BenchLog(bool json);
/// j[key] as a number; NaN when it is missing or not a number.
double Number(const nlohmann::json& j, const char* key);

}  // namespace pstrain::apps
