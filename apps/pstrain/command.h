#pragma once
// One entry of pstrain's subcommand table (main.cc). `setup` adds the
// subcommand's flags to `sub` and returns the function that runs it once the
// command line is parsed; that function returns the process's exit status.

#include <functional>

#include <CLI/CLI.hpp>

#include "util/status.h"

namespace pstrain::apps {

using RunFn = std::function<int()>;

struct Command {
  const char* name;
  const char* help;
  RunFn (*setup)(CLI::App* sub);
  /// Whether the subcommand takes --config and --print_config.
  bool configurable = true;
};

/// A subcommand's checks of its parsed command line, which refuse bad
/// usage (kInvalidArgument naming the flag) before anything runs.
using CheckFn = std::function<Status()>;
/// A subcommand in two steps, so that a test can check a command line
/// without running anything: `run` makes the checks of `check` first (and
/// exits 2 on their error), then runs.
struct CheckedCommand {
  CheckFn check;
  RunFn run;
};

RunFn SetupServe(CLI::App* sub);
RunFn SetupWork(CLI::App* sub);
RunFn SetupLaunch(CLI::App* sub);
CheckedCommand SetupLaunchChecked(CLI::App* sub);
RunFn SetupEval(CLI::App* sub);
RunFn SetupBench(CLI::App* sub);
RunFn SetupRun(CLI::App* sub);
RunFn SetupReport(CLI::App* sub);
RunFn SetupCompletions(CLI::App* sub);
RunFn SetupMan(CLI::App* sub);

}  // namespace pstrain::apps
