// pstrain run: one command line for every process of a job started by a
// cluster launcher (srun, mpirun, torchrun, a Kubernetes Indexed Job). The
// rank, from --rank or the launcher's environment, picks the role: ranks
// below --num_servers serve, the others work, with the same flags.

#include <algorithm>
#include <iostream>

#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"

extern char** environ;

namespace pstrain::apps {

namespace {

// The value of int option `name` when given, else `fallback`.
int IntOption(const CLI::App& app, const std::string& name, int fallback) {
  const CLI::Option* opt = app.get_option_no_throw(name);
  return opt != nullptr && opt->count() > 0 ? opt->as<int>() : fallback;
}

// This process's world from the flags and the launcher's environment.
Result<cluster::World> RunWorld(const CLI::App& run) {
  cluster::World w;
  cluster::GivenFlags given;
  w.rank = IntOption(run, "--rank", -1);
  w.world_size = IntOption(run, "--world_size", -1);
  w.num_servers = run.get_option("--num_servers")->as<int>();
  given.rank = w.rank >= 0;
  given.world_size = w.world_size >= 0;
  given.master_addr = given.master_port = true;  // serve and work read these
  PS_RETURN_IF_ERROR(
      cluster::ApplyLauncherEnv(cluster::EnvironmentMap(environ), given, &w));
  if (w.rank < 0) {
    return InvalidArgument(
        "--rank is not set (pass --rank or set RANK, OMPI_COMM_WORLD_RANK "
        "or SLURM_PROCID)");
  }
  return w;
}

// The arguments of `run`'s command line that `work` also has, as
// --name=value, one per value given (on the command line or by --config).
std::vector<std::string> WorkerArgs(const CLI::App& run, const CLI::App& work) {
  std::vector<std::string> args;
  for (const CLI::Option* opt : run.get_options({})) {
    const std::string name = "--" + opt->get_single_name();
    if (opt->count() == 0 || work.get_option_no_throw(name) == nullptr)
      continue;
    for (const std::string& value : opt->results()) {
      args.push_back(name + "=" + value);
    }
  }
  return args;
}

int RunWorker(const CLI::App& run) {
  CLI::App work{"worker", "pstrain run"};
  RunFn work_fn = SetupWork(&work);
  std::vector<std::string> args = WorkerArgs(run, work);
  std::reverse(args.begin(), args.end());  // CLI11 parses a vector backwards
  try {
    work.parse(args);
  } catch (const CLI::ParseError& e) {
    std::cerr << "pstrain: error: " << e.what()
              << " (see pstrain run --help)\n";
    return 2;
  }
  return work_fn();
}

}  // namespace

RunFn SetupRun(CLI::App* sub) {
  // serve's flags are a superset of work's but for --device.
  RunFn serve = SetupServe(sub);
  sub->add_option("--device", "Workers' device: cpu, cuda or cuda:i")
      ->default_str("cpu");
  return [sub, serve] {
    auto world = RunWorld(*sub);
    if (!world.ok()) {
      std::cerr << "pstrain: error: " << world.status().message() << "\n";
      return 2;
    }
    return world->is_server() ? serve() : RunWorker(*sub);
  };
}

}  // namespace pstrain::apps
