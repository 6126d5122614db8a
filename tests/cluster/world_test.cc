#include "cluster/world.h"

#include <gtest/gtest.h>

namespace pstrain::cluster {
namespace {

using Env = std::map<std::string, std::string>;

World Valid() {
  World world;
  world.rank = 1;
  world.world_size = 3;
  return world;
}

std::string Message(const Status& status) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  return status.message();
}

TEST(WorldTest, RolesFollowFromRank) {
  World world = Valid();
  world.num_servers = 2;
  world.world_size = 5;
  world.rank = 1;
  EXPECT_TRUE(world.is_server());
  world.rank = 3;
  EXPECT_FALSE(world.is_server());
  EXPECT_EQ(world.worker_index(), 1);
  EXPECT_EQ(world.num_workers(), 3);
}

TEST(EnvironmentMapTest, SplitsAtFirstEquals) {
  char a[] = "RANK=1", b[] = "OPTS=x=y", c[] = "NOEQUALS", d[] = "EMPTY=";
  char* envp[] = {a, b, c, d, nullptr};
  Env expected = {{"RANK", "1"}, {"OPTS", "x=y"}, {"EMPTY", ""}};
  EXPECT_EQ(EnvironmentMap(envp), expected);
  EXPECT_TRUE(EnvironmentMap(nullptr).empty());
}

TEST(ApplyLauncherEnvTest, FillsFromTorchrunVariables) {
  World world;
  Env env = {{"RANK", "2"},
             {"WORLD_SIZE", "4"},
             {"MASTER_ADDR", "10.0.0.1"},
             {"MASTER_PORT", "1234"}};
  ASSERT_TRUE(ApplyLauncherEnv(env, GivenFlags(), &world).ok());
  EXPECT_EQ(world.rank, 2);
  EXPECT_EQ(world.world_size, 4);
  EXPECT_EQ(world.master_addr, "10.0.0.1");
  EXPECT_EQ(world.master_port, 1234);
}

TEST(ApplyLauncherEnvTest, FlagsWin) {
  World world;
  world.rank = 1;
  world.master_addr = "host-a";
  GivenFlags given;
  given.rank = true;
  given.master_addr = true;
  Env env = {{"RANK", "not even a number"},
             {"WORLD_SIZE", "4"},
             {"MASTER_ADDR", "10.0.0.1"}};
  ASSERT_TRUE(ApplyLauncherEnv(env, given, &world).ok());
  EXPECT_EQ(world.rank, 1);
  EXPECT_EQ(world.world_size, 4);
  EXPECT_EQ(world.master_addr, "host-a");
  EXPECT_EQ(world.master_port, 29500);
}

TEST(ApplyLauncherEnvTest, AbsentVariablesLeaveFieldsAlone) {
  World world;
  ASSERT_TRUE(ApplyLauncherEnv(Env(), GivenFlags(), &world).ok());
  EXPECT_EQ(world.rank, -1);
  EXPECT_EQ(world.world_size, -1);
  EXPECT_EQ(world.master_addr, "localhost");
  EXPECT_EQ(world.master_port, 29500);
}

TEST(ApplyLauncherEnvTest, SlurmVariablesAreAFallback) {
  World world;
  Env env = {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "5"}};
  ASSERT_TRUE(ApplyLauncherEnv(env, GivenFlags(), &world).ok());
  EXPECT_EQ(world.rank, 3);
  EXPECT_EQ(world.world_size, 5);
  env["RANK"] = "1";
  ASSERT_TRUE(ApplyLauncherEnv(env, GivenFlags(), &world).ok());
  EXPECT_EQ(world.rank, 1);
}

TEST(ApplyLauncherEnvTest, OpenMpiVariables) {
  World world;
  Env env = {{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}};
  ASSERT_TRUE(ApplyLauncherEnv(env, GivenFlags(), &world).ok());
  EXPECT_EQ(world.rank, 2);
  EXPECT_EQ(world.world_size, 4);
  EXPECT_EQ(world.master_addr, "localhost");
}

// mpirun inside an sbatch script: every process inherits SLURM_PROCID=0, and
// only Open MPI's variables tell the processes apart.
TEST(ApplyLauncherEnvTest, OpenMpiWinsOverSlurmAndTorchrunOverBoth) {
  World world;
  Env env = {{"OMPI_COMM_WORLD_RANK", "2"},
             {"OMPI_COMM_WORLD_SIZE", "4"},
             {"SLURM_PROCID", "0"},
             {"SLURM_NTASKS", "1"}};
  ASSERT_TRUE(ApplyLauncherEnv(env, GivenFlags(), &world).ok());
  EXPECT_EQ(world.rank, 2);
  EXPECT_EQ(world.world_size, 4);
  env["RANK"] = "3";
  env["WORLD_SIZE"] = "5";
  ASSERT_TRUE(ApplyLauncherEnv(env, GivenFlags(), &world).ok());
  EXPECT_EQ(world.rank, 3);
  EXPECT_EQ(world.world_size, 5);
}

TEST(ApplyLauncherEnvTest, SlurmNodeListNamesTheMaster) {
  World world;
  Env env = {{"SLURM_JOB_NODELIST", "gpu[07-09,12],cpu1"}};
  ASSERT_TRUE(ApplyLauncherEnv(env, GivenFlags(), &world).ok());
  EXPECT_EQ(world.master_addr, "gpu07");
  env["MASTER_ADDR"] = "10.0.0.1";
  ASSERT_TRUE(ApplyLauncherEnv(env, GivenFlags(), &world).ok());
  EXPECT_EQ(world.master_addr, "10.0.0.1");
  GivenFlags given;
  given.master_addr = true;
  world.master_addr = "flag";
  ASSERT_TRUE(ApplyLauncherEnv(env, given, &world).ok());
  EXPECT_EQ(world.master_addr, "flag");
}

TEST(FirstSlurmHostTest, Forms) {
  EXPECT_EQ(*FirstSlurmHost("node1"), "node1");
  EXPECT_EQ(*FirstSlurmHost("a,b"), "a");
  EXPECT_EQ(*FirstSlurmHost("n[3-5]"), "n3");
  EXPECT_EQ(*FirstSlurmHost("n[010,2]x"), "n010");
  EXPECT_EQ(FirstSlurmHost("").status().message(),
            "SLURM_JOB_NODELIST='' names no host");
  EXPECT_FALSE(FirstSlurmHost("[1-2]").ok());
}

TEST(ApplyLauncherEnvTest, RejectsNonNumbers) {
  World world;
  EXPECT_EQ(Message(ApplyLauncherEnv({{"RANK", "x"}}, GivenFlags(), &world)),
            "RANK='x' is not a number");
  EXPECT_EQ(
      Message(ApplyLauncherEnv({{"WORLD_SIZE", "3x"}}, GivenFlags(), &world)),
      "WORLD_SIZE='3x' is not a number");
  EXPECT_EQ(
      Message(ApplyLauncherEnv({{"MASTER_PORT", ""}}, GivenFlags(), &world)),
      "MASTER_PORT='' is not a number");
  EXPECT_EQ(
      Message(ApplyLauncherEnv({{"SLURM_PROCID", " 1"}}, GivenFlags(), &world)),
      "SLURM_PROCID=' 1' is not a number");
  EXPECT_EQ(Message(ApplyLauncherEnv({{"MASTER_PORT", "99999999999"}},
                                     GivenFlags(), &world)),
            "MASTER_PORT='99999999999' is out of range");
}

TEST(ValidateWorldTest, AcceptsAConsistentWorld) {
  World world = Valid();
  EXPECT_TRUE(ValidateWorld(world, "worker").ok());
  world.rank = 0;
  EXPECT_TRUE(ValidateWorld(world, "server").ok());
  world.rank = -1;
  EXPECT_TRUE(ValidateWorld(world, "launch").ok());
  world.master_port = 0;
  EXPECT_TRUE(ValidateWorld(world, "launch").ok());
}

TEST(ValidateWorldTest, RankOutOfRange) {
  World world = Valid();
  world.rank = 3;
  EXPECT_EQ(Message(ValidateWorld(world, "worker")),
            "--rank 3 is out of range for --world_size 3 (expected 0..2)");
  world.rank = -2;
  EXPECT_EQ(Message(ValidateWorld(world, "worker")),
            "--rank -2 is out of range for --world_size 3 (expected 0..2)");
  world.rank = -1;
  EXPECT_EQ(Message(ValidateWorld(world, "worker")),
            "--rank is not set (pass --rank or set RANK)");
}

TEST(ValidateWorldTest, RankMustMatchRole) {
  World world = Valid();
  world.rank = 0;
  EXPECT_EQ(Message(ValidateWorld(world, "worker")),
            "--rank 0 is a server rank; run `pstrain serve` for it");
  world.rank = 2;
  EXPECT_EQ(Message(ValidateWorld(world, "server")),
            "--rank 2 is a worker rank; run `pstrain work` for it");
}

TEST(ValidateWorldTest, Sizes) {
  World world = Valid();
  world.num_servers = 0;
  EXPECT_EQ(Message(ValidateWorld(world, "worker")),
            "--num_servers 0 is out of range (expected at least 1)");
  world.num_servers = 3;
  EXPECT_EQ(Message(ValidateWorld(world, "worker")),
            "--world_size 3 is too small for --num_servers 3 (expected at "
            "least 4: the servers and one worker)");
  world.world_size = -1;
  EXPECT_EQ(Message(ValidateWorld(world, "launch")),
            "--world_size is not set (pass --world_size or set WORLD_SIZE)");
}

TEST(ValidateWorldTest, Master) {
  World world = Valid();
  world.master_port = 65536;
  EXPECT_EQ(Message(ValidateWorld(world, "worker")),
            "--master_port 65536 is out of range (expected 0..65535)");
  world.master_port = -1;
  EXPECT_EQ(Message(ValidateWorld(world, "worker")),
            "--master_port -1 is out of range (expected 0..65535)");
  world.master_port = 29500;
  world.master_addr = "";
  EXPECT_EQ(Message(ValidateWorld(world, "worker")), "--master_addr is empty");
}

}  // namespace
}  // namespace pstrain::cluster
