// `pstrain run` under the environments srun and mpirun give their tasks:
// the rank picks the role, and the job finishes.

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;
using Env = std::vector<std::string>;

// `pstrain run` for every rank, each under `env_of(rank, port)`: rank 0
// with MASTER_PORT 0, the others with the port it then listens on. Returns
// their results in rank order.
std::vector<ProcessResult> RunAll(
    const std::function<Env(int, const std::string&)>& env_of,
    const ScratchDir& dir) {
  std::vector<std::unique_ptr<Process>> procs;
  std::string port = "0";
  for (int rank = 0; rank < 3; ++rank) {
    std::vector<std::string> args = {"/usr/bin/env", "-u", "RANK", "-u",
                                     "WORLD_SIZE"};
    for (const std::string& kv : env_of(rank, port))
      args.push_back(kv);
    args.insert(args.end(),
                {PstrainBin(), "run", "--model", "mlp", "--batch_size", "8",
                 "--max_steps", "6", "--data_dir", dir.path(), "--threads", "1",
                 "--checkpoint", dir.File("model.pt"), "--json"});
    procs.push_back(std::make_unique<Process>(args));
    if (rank == 0)
      port = std::to_string(procs[0]->ListenPort(30));
  }
  std::vector<ProcessResult> results;
  for (auto& p : procs)
    results.push_back(p->Wait(120));
  return results;
}

void ExpectRoles(const std::vector<ProcessResult>& results) {
  ASSERT_EQ(results.size(), 3u);
  for (int rank = 0; rank < 3; ++rank) {
    const auto& r = results[rank];
    EXPECT_EQ(r.exit_code, 0) << "rank " << rank << ": " << r.err;
    auto summary = FindEvent(r.out, "summary");
    EXPECT_EQ(summary["rank"], rank) << r.out;
    EXPECT_EQ(summary["role"], rank == 0 ? "server" : "worker") << r.out;
    EXPECT_EQ(summary["steps"], 6) << r.out;
  }
}

TEST(RunTest, SrunEnvironmentStartsServerAndWorkers) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 320, 50);
  ExpectRoles(RunAll(
      [](int rank, const std::string& port) {
        return Env{"SLURM_PROCID=" + std::to_string(rank), "SLURM_NTASKS=3",
                   "SLURM_JOB_NODELIST=localhost", "MASTER_PORT=" + port};
      },
      dir));
}

// mpirun inside an sbatch script: Slurm's variables are the batch step's,
// the same in every process; Open MPI's tell the ranks apart.
TEST(RunTest, MpirunEnvironmentStartsServerAndWorkers) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 320, 50);
  ExpectRoles(RunAll(
      [](int rank, const std::string& port) {
        return Env{"OMPI_COMM_WORLD_RANK=" + std::to_string(rank),
                   "OMPI_COMM_WORLD_SIZE=3",
                   "SLURM_PROCID=0",
                   "SLURM_NTASKS=1",
                   "MASTER_ADDR=127.0.0.1",
                   "MASTER_PORT=" + port};
      },
      dir));
}

TEST(RunTest, NoRankAnywhereIsBadUsage) {
  auto r = RunPstrain({"run", "--world_size", "3"}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "pstrain: error: --rank is not set (pass --rank or set RANK, "
            "OMPI_COMM_WORLD_RANK or SLURM_PROCID)\n");
}

}  // namespace
}  // namespace pstrain::testing
