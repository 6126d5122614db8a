// pstrain: parameter-server training for PyTorch models. The subcommand
// table; each subcommand lives in cmd_<name>.cc.

#include <iostream>

#include <CLI/CLI.hpp>

#include "apps/pstrain/command.h"
#include "wire/frame.h"

namespace pstrain::apps {
namespace {

const Command kCommands[] = {
    {"serve", "Run rank 0: the parameter server and master", SetupServe},
    {"work", "Run a worker rank", SetupWork},
    {"launch", "Run one server and world_size-1 workers on this machine", SetupLaunch},
    {"eval", "Score a saved model on the test set", SetupEval},
    {"bench", "Measure the wire and training against the machine's limits", SetupBench},
};

int Main(int argc, char** argv) {
  CLI::App app{"pstrain: parameter-server training for PyTorch models", "pstrain"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("pstrain 0.1.0 (protocol ") +
                                        std::to_string(wire::kWireVersion) + ")");
  std::vector<std::pair<CLI::App*, RunFn>> subs;
  for (const Command& c : kCommands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    subs.emplace_back(sub, c.setup(sub));
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
  for (auto& [sub, run] : subs) {
    if (sub->parsed()) return run();
  }
  return 2;
}

}  // namespace
}  // namespace pstrain::apps

int main(int argc, char** argv) { return pstrain::apps::Main(argc, argv); }
