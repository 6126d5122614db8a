// pstrain: parameter-server training for PyTorch models. The subcommand
// table; each subcommand lives in cmd_<name>.cc.

#include <iostream>

#include <CLI/CLI.hpp>

#include "apps/pstrain/command.h"
#include "apps/pstrain/config_flags.h"
#include "apps/pstrain/version.h"

namespace pstrain::apps {
namespace {

const Command kCommands[] = {
    {"serve", "Run rank 0: the parameter server and master", SetupServe},
    {"work", "Run a worker rank", SetupWork},
    {"launch", "Run one server and world_size-1 workers on this machine", SetupLaunch},
    {"eval", "Score a saved model on the test set", SetupEval},
    {"bench", "Measure the wire and training against the machine's limits", SetupBench},
    {"run", "Serve or work by rank, from --rank or a launcher's environment "
            "(torchrun, Open MPI, Slurm)", SetupRun},
    {"completions", "Print the completion script for bash, zsh or fish",
     SetupCompletions, false},
    {"man", "Print the man page of pstrain or of one subcommand", SetupMan, false},
};

int Main(int argc, char** argv) {
  CLI::App app{"pstrain: parameter-server training for PyTorch models", "pstrain"};
  app.require_subcommand(1);
  app.set_version_flag("--version", VersionText,
                       "Print pstrain's, the protocol's and libtorch's "
                       "versions and whether CUDA is available");
  std::vector<std::pair<CLI::App*, RunFn>> subs;
  for (const Command& c : kCommands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    subs.emplace_back(sub, c.setup(sub));
    if (c.configurable) AddConfigFlags(sub);
  }
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
  }
  if (PrintConfigIfAsked(app, std::cout)) return 0;
  for (auto& [sub, run] : subs) {
    if (sub->parsed()) return run();
  }
  return 2;
}

}  // namespace
}  // namespace pstrain::apps

int main(int argc, char** argv) { return pstrain::apps::Main(argc, argv); }
