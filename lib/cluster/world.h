#pragma once
// World: where this process sits in the job (its rank among world_size
// processes, who the master is), from flags or a launcher's environment.
// Ranks 0..num_servers-1 are servers, the rest workers; rank 0 is also the
// master. A value type; the functions here are pure and thread-safe.

#include <map>
#include <string>

#include "util/result.h"
#include "util/status.h"

namespace pstrain::cluster {

struct World {
  /// 0..world_size-1; -1 while unknown.
  int rank = -1;
  /// Number of processes, servers and workers; -1 while unknown.
  int world_size = -1;
  /// Host of rank 0, which every process dials first. Default: "localhost".
  std::string master_addr = "localhost";
  /// TCP port of rank 0. Default: 29500 (torchrun's).
  int master_port = 29500;
  /// Ranks 0..num_servers-1 are servers. Default: 1.
  int num_servers = 1;

  bool is_server() const { return rank < num_servers; }
  /// 0..num_workers()-1. REQUIRES: !is_server().
  int worker_index() const { return rank - num_servers; }
  int num_workers() const { return world_size - num_servers; }
};

/// Which World fields the user gave as flags; those win over the environment.
struct GivenFlags {
  bool rank = false;
  bool world_size = false;
  bool master_addr = false;
  bool master_port = false;
};

/// Fills the fields not in `given` from a launcher's environment `env`
/// (the library never reads the environment; apps pass EnvironmentMap).
/// Each field takes the first variable that is set, in this order:
///   rank:        RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID
///   world_size:  WORLD_SIZE, OMPI_COMM_WORLD_SIZE, SLURM_NTASKS
///   master_addr: MASTER_ADDR, the first host of SLURM_JOB_NODELIST
///   master_port: MASTER_PORT
/// (torchrun, then Open MPI, then Slurm: mpirun inside an sbatch script
/// inherits the batch step's SLURM_PROCID). Where none is set the field is
/// left as it is.
/// Returns kInvalidArgument naming the variable when a number does not parse:
/// "RANK='x' is not a number", "MASTER_PORT='99999999999' is out of range".
[[nodiscard]] Status ApplyLauncherEnv(
    const std::map<std::string, std::string>& env, const GivenFlags& given,
    World* world);

/// The first host of a Slurm node list: "node[07-09,12],gpu1" -> "node07",
/// "a,b" -> "a". kInvalidArgument naming SLURM_JOB_NODELIST when it names
/// no host ("", "[1-2]").
Result<std::string> FirstSlurmHost(const std::string& nodelist);

/// Checks `world` for a process of `role`: "server", "worker", or "launch"
/// (which has no rank of its own, so rank is not checked). Requires
/// num_servers >= 1, world_size >= num_servers + 1, 0 <= rank < world_size,
/// master_port in 0..65535 and a non-empty master_addr; a "server" needs a
/// server rank and a "worker" a worker rank.
/// Returns kInvalidArgument with one line naming the flag, e.g.
/// "--rank 3 is out of range for --world_size 3 (expected 0..2)" or
/// "--rank 0 is a server rank; run `pstrain serve` for it".
/// REQUIRES: role is one of the three.
[[nodiscard]] Status ValidateWorld(const World& world, const std::string& role);

/// Parses "KEY=VALUE" entries of a null-terminated `envp` (main's third
/// argument or `environ`); entries without '=' are skipped. envp may be null.
std::map<std::string, std::string> EnvironmentMap(char** envp);

}  // namespace pstrain::cluster
