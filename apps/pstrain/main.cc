// pstrain: parameter-server training for PyTorch models. The subcommand
// table; each subcommand lives in cmd_<name>.cc.

#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <typeinfo>

#include <CLI/CLI.hpp>

#include "apps/pstrain/command.h"
#include "apps/pstrain/config_flags.h"
#include "apps/pstrain/flags.h"
#include "apps/pstrain/version.h"
#include "report/event_log.h"

namespace pstrain::apps {
namespace {

const Command kCommands[] = {
    {"serve", "Run rank 0: the parameter server and master", SetupServe},
    {"work", "Run a worker rank", SetupWork},
    {"launch", "Run one server and world_size-1 workers on this machine",
     SetupLaunch},
    {"eval", "Score a saved model on the test set", SetupEval},
    {"bench", "Measure the wire and training against the machine's limits",
     SetupBench},
    {"run",
     "Serve or work by rank, from --rank or a launcher's environment "
     "(torchrun, Open MPI, Slurm)",
     SetupRun},
    {"report",
     "Draw runs' JSON Lines output as one self-contained HTML page of charts",
     SetupReport, false},
    {"completions", "Print the completion script for bash, zsh or fish",
     SetupCompletions, false},
    {"man", "Print the man page of pstrain or of one subcommand", SetupMan,
     false},
};

std::string Demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> plain(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && plain ? plain.get() : name;
}

// The exception being handled, in one line: its type and the first line of
// its what() ("c10::Error: ..."; libtorch's carry a backtrace after it).
std::string DescribeCurrentException() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  const std::string name =
      type != nullptr ? Demangle(type->name()) : "an exception";
  try {
    throw;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return name + ": " + what.substr(0, what.find('\n'));
  } catch (...) {
    return name;
  }
}

// The deepest parsed subcommand, or `app` itself.
const CLI::App& ParsedLeaf(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->parsed())
      return ParsedLeaf(*sub);
  }
  return app;
}

// An exception no subcommand caught: exit status 1, and one error line
// naming it (also a JSON "error" event with --json).
int Uncaught(const CLI::App& app) {
  const std::string message = "uncaught " + DescribeCurrentException();
  const CLI::App& leaf = ParsedLeaf(app);
  const CLI::Option* json = leaf.get_option_no_throw("--json");
  const CLI::Option* rank = leaf.get_option_no_throw("--rank");
  report::EventLogOptions o;
  o.json = json != nullptr && json->count() > 0;
  o.quiet = true;
  o.rank = rank != nullptr && rank->count() > 0 ? rank->as<int>() : 0;
  report::EventLog(o).Error(message, 1);
  return 1;
}

int Main(int argc, char** argv) {
  CLI::App app{"pstrain: parameter-server training for PyTorch models",
               "pstrain"};
  app.require_subcommand(1);
  app.set_version_flag("--version", VersionText,
                       "Print pstrain's, the protocol's and libtorch's "
                       "versions and whether CUDA is available");
  std::vector<std::pair<CLI::App*, RunFn>> subs;
  for (const Command& c : kCommands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    subs.emplace_back(sub, c.setup(sub));
    if (c.configurable)
      AddConfigFlags(sub);
  }
  RefuseNegativeUnsigned(&app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "pstrain: error: " << e.what() << " (see pstrain --help)\n";
    return 2;
  } catch (...) {
    return Uncaught(app);
  }
  try {
    if (PrintConfigIfAsked(app, std::cout))
      return 0;
    for (auto& [sub, run] : subs) {
      if (sub->parsed())
        return run();
    }
  } catch (...) {
    return Uncaught(app);
  }
  return 2;
}

}  // namespace
}  // namespace pstrain::apps

int main(int argc, char** argv) {
  return pstrain::apps::Main(argc, argv);
}
