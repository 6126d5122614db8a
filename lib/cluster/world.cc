#include "cluster/world.h"

#include <charconv>
#include <cstring>
#include <initializer_list>

#include "util/check.h"

namespace pstrain::cluster {
namespace {

using Env = std::map<std::string, std::string>;

// Sets *value from env[name] when present. "RANK='x' is not a number".
Status ParseInt(const Env& env, const std::string& name, int* value) {
  auto it = env.find(name);
  if (it == env.end())
    return Status::Ok();
  const std::string& text = it->second;
  int parsed = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, parsed);
  std::string quoted = name + "='" + text + "'";
  if (ec == std::errc::result_out_of_range) {
    return InvalidArgument(quoted + " is out of range");
  }
  if (text.empty() || ec != std::errc() || ptr != end) {
    return InvalidArgument(quoted + " is not a number");
  }
  *value = parsed;
  return Status::Ok();
}

// Parses the first of `names` that is set. The order is the launchers'
// precedence: torchrun's, then Open MPI's, then Slurm's. Open MPI comes before
// Slurm because mpirun inside an sbatch script inherits the batch step's
// SLURM_PROCID (0 for every process) while OMPI_COMM_WORLD_RANK is its own.
Status ParseFirst(const Env& env, std::initializer_list<const char*> names,
                  int* value) {
  for (const char* name : names) {
    if (env.count(name))
      return ParseInt(env, name, value);
  }
  return Status::Ok();
}

Status CheckSizes(const World& w) {
  if (w.num_servers < 1) {
    return InvalidArgument("--num_servers " + std::to_string(w.num_servers) +
                           " is out of range (expected at least 1)");
  }
  if (w.world_size == -1) {
    return InvalidArgument(
        "--world_size is not set (pass --world_size or set WORLD_SIZE)");
  }
  if (w.world_size < w.num_servers + 1) {
    return InvalidArgument(
        "--world_size " + std::to_string(w.world_size) +
        " is too small for --num_servers " + std::to_string(w.num_servers) +
        " (expected at least " + std::to_string(w.num_servers + 1) +
        ": the servers and one worker)");
  }
  return Status::Ok();
}

Status CheckRank(const World& w, const std::string& role) {
  if (role == "launch")
    return Status::Ok();
  const std::string rank = "--rank " + std::to_string(w.rank);
  if (w.rank == -1) {
    return InvalidArgument("--rank is not set (pass --rank or set RANK)");
  }
  if (w.rank < 0 || w.rank >= w.world_size) {
    return InvalidArgument(rank + " is out of range for --world_size " +
                           std::to_string(w.world_size) + " (expected 0.." +
                           std::to_string(w.world_size - 1) + ")");
  }
  if (role == "server" && !w.is_server()) {
    return InvalidArgument(rank +
                           " is a worker rank; run `pstrain work` for it");
  }
  if (role == "worker" && w.is_server()) {
    return InvalidArgument(rank +
                           " is a server rank; run `pstrain serve` for it");
  }
  return Status::Ok();
}

Status CheckMaster(const World& w) {
  if (w.master_port < 0 || w.master_port > 65535) {
    return InvalidArgument("--master_port " + std::to_string(w.master_port) +
                           " is out of range (expected 0..65535)");
  }
  if (w.master_addr.empty())
    return InvalidArgument("--master_addr is empty");
  return Status::Ok();
}

}  // namespace

Status ApplyLauncherEnv(const Env& env, const GivenFlags& given, World* world) {
  PS_CHECK(world != nullptr);
  if (!given.rank) {
    PS_RETURN_IF_ERROR(ParseFirst(
        env, {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}, &world->rank));
  }
  if (!given.world_size) {
    PS_RETURN_IF_ERROR(
        ParseFirst(env, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"},
                   &world->world_size));
  }
  if (!given.master_port) {
    PS_RETURN_IF_ERROR(ParseInt(env, "MASTER_PORT", &world->master_port));
  }
  if (given.master_addr)
    return Status::Ok();
  auto addr = env.find("MASTER_ADDR");
  auto nodes = env.find("SLURM_JOB_NODELIST");
  if (addr != env.end()) {
    world->master_addr = addr->second;
  } else if (nodes != env.end()) {
    PS_ASSIGN_OR_RETURN(world->master_addr, FirstSlurmHost(nodes->second));
  }
  return Status::Ok();
}

Result<std::string> FirstSlurmHost(const std::string& nodelist) {
  // The first host ends at the first ',' outside brackets; a bracket holds
  // its index ranges, whose first number is the first host's.
  const size_t cut = nodelist.find_first_of(",[");
  std::string host = nodelist.substr(0, cut);
  if (cut != std::string::npos && nodelist[cut] == '[' && !host.empty()) {
    const size_t end = nodelist.find_first_of(",-]", cut + 1);
    if (end == std::string::npos || end == cut + 1)
      host.clear();
    else
      host += nodelist.substr(cut + 1, end - cut - 1);
  }
  if (host.empty()) {
    return InvalidArgument("SLURM_JOB_NODELIST='" + nodelist +
                           "' names no host");
  }
  return host;
}

Status ValidateWorld(const World& world, const std::string& role) {
  PS_CHECK(role == "server" || role == "worker" || role == "launch")
      << "unknown role " << role;
  PS_RETURN_IF_ERROR(CheckSizes(world));
  PS_RETURN_IF_ERROR(CheckRank(world, role));
  return CheckMaster(world);
}

std::map<std::string, std::string> EnvironmentMap(char** envp) {
  std::map<std::string, std::string> env;
  for (char** entry = envp; entry != nullptr && *entry != nullptr; ++entry) {
    const char* eq = std::strchr(*entry, '=');
    if (eq == nullptr)
      continue;
    env.emplace(std::string(*entry, static_cast<size_t>(eq - *entry)), eq + 1);
  }
  return env;
}

}  // namespace pstrain::cluster
