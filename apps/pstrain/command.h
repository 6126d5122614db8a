#pragma once
// One entry of pstrain's subcommand table (main.cc). `setup` adds the
// subcommand's flags to `sub` and returns the function that runs it once the
// command line is parsed; that function returns the process's exit status.

#include <functional>

#include <CLI/CLI.hpp>

namespace pstrain::apps {

using RunFn = std::function<int()>;

struct Command {
  const char* name;
  const char* help;
  RunFn (*setup)(CLI::App* sub);
  /// Whether the subcommand takes --config and --print_config.
  bool configurable = true;
};

RunFn SetupServe(CLI::App* sub);
RunFn SetupWork(CLI::App* sub);
RunFn SetupLaunch(CLI::App* sub);
RunFn SetupEval(CLI::App* sub);
RunFn SetupBench(CLI::App* sub);
RunFn SetupRun(CLI::App* sub);
RunFn SetupCompletions(CLI::App* sub);
RunFn SetupMan(CLI::App* sub);

}  // namespace pstrain::apps
