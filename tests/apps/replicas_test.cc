// --replicas: each server's shard has a standby on the next server, which
// takes the shard over when the server is killed, and the run goes on
// without a restart: under `launch`, with the final parameters of a run
// that lost no server. A chain with no survivor ends the job with one
// line; a bad --replicas exits 2.

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

constexpr int kSteps = 60;
constexpr double kDeadAfter = 3;

// `pstrain launch` of 3 servers with --replicas 2 and 2 workers, without
// the binary's path.
std::vector<std::string> LaunchArgs(const ScratchDir& dir,
                                    const std::string& checkpoint,
                                    double dead_after = kDeadAfter,
                                    int steps = kSteps, int epochs = 2) {
  return {"launch",
          "--world_size",
          "5",
          "--num_servers",
          "3",
          "--replicas",
          "2",
          "--model",
          "net",
          "--batch_size",
          "8",
          "--epochs",
          std::to_string(epochs),
          "--max_steps",
          std::to_string(steps),
          "--seed",
          "3",
          "--dead_after",
          std::to_string(dead_after),
          "--heartbeat",
          "0.5",
          "--log_interval",
          "1",
          "--master_port",
          "0",
          "--data_dir",
          dir.path(),
          "--json",
          "--checkpoint",
          dir.File(checkpoint)};
}

std::vector<std::string> WithBin(std::vector<std::string> args) {
  args.insert(args.begin(), PstrainBin());
  return args;
}

// The same under pstrain_testing, every worker held before step `step`
// until the file `go` exists: the run is alive for the test's kills, on a
// machine of any speed.
std::vector<std::string> Held(std::vector<std::string> args, int step,
                              const std::string& go) {
  args.insert(args.begin(), PstrainTestingBin());
  return Concat(
      args, {"--hold_before_step", std::to_string(step), "--hold_until", go});
}

// Waits until some worker has logged step `step`, and returns the pid
// server `rank` announced; -1 when either does not come within a minute.
int WaitForStep(const Process& launch, int rank, int step) {
  for (int i = 0; i < 3000; ++i) {
    int pid = -1, reached = -1;
    for (const auto& e : FindEvents(launch.OutSoFar(), "listen")) {
      if (e["rank"] == rank && e.contains("pid"))
        pid = e["pid"];
    }
    for (const auto& e : FindEvents(launch.OutSoFar(), "step"))
      reached = std::max(reached, e["step"].get<int>());
    if (pid > 0 && reached >= step)
      return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

// The longest time between two step events of one worker: a stall.
double LongestStall(const std::string& out) {
  std::map<int, double> last;
  double longest = 0;
  for (const auto& e : FindEvents(out, "step")) {
    const int rank = e["rank"];
    const double t = e["time"];
    if (last.count(rank))
      longest = std::max(longest, t - last[rank]);
    last[rank] = t;
  }
  return longest;
}

// A run of `steps` under launch --restart_servers, its workers held
// before its last 10 steps until the file `go` exists.
std::vector<std::string> Restarting(const ScratchDir& dir,
                                    const std::string& checkpoint, int steps,
                                    const std::string& go) {
  std::vector<std::string> args =
      Held(LaunchArgs(dir, checkpoint, kDeadAfter, steps, 5), steps - 10, go);
  args.push_back("--restart_servers");
  return args;
}

// The tiny data set in `dir`, and a long run of `steps` that loses no
// server into whole.pt: what a run with faults must end as.
void RunWhole(const ScratchDir& dir, int steps) {
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto whole =
      RunPstrain(LaunchArgs(dir, "whole.pt", kDeadAfter, steps, 5), 240);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
}

// The ranks whose server summary `out` holds: the master's at the end.
std::vector<int> ServerSummaries(const std::string& out) {
  std::vector<int> ranks;
  for (const auto& e : FindEvents(out, "summary")) {
    if (e["role"] == "server")
      ranks.push_back(e["rank"]);
  }
  return ranks;
}

class ReplicasTest : public ::testing::TestWithParam<int> {};

// Server GetParam() (0, the master: its standby is on rank 1, which
// launch names the master; 1: on rank 2; 2: on rank 0) is killed with
// SIGKILL at a random step.
TEST_P(ReplicasTest, SyncRunOutlivesAKilledServerAsIfNoneDied) {
  const int victim = GetParam();
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto whole = RunPstrain(LaunchArgs(dir, "whole.pt"), 180);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;

  std::mt19937 random(std::random_device{}());
  const int step = std::uniform_int_distribution<int>(3, kSteps - 10)(random);
  SCOPED_TRACE("server " + std::to_string(victim) + " killed at step " +
               std::to_string(step));
  const std::string go = dir.File("go");
  Process launch(Held(LaunchArgs(dir, "killed.pt"), kSteps - 5, go));
  const int pid = WaitForStep(launch, victim, step);
  ASSERT_GT(pid, 0) << launch.OutSoFar();
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  std::ofstream(go).close();
  auto r = launch.Wait(180);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (victim == 0) {
    // Launch saw the master die and named its standby, rank 1, in its
    // place; the run's single summary is rank 1's.
    EXPECT_NE(r.err.find("pstrain launch: rank 0 was killed by signal 9; "
                         "rank 1 is the master now"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("[rank 1] standby of rank 0: named the master"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(ServerSummaries(r.out), std::vector<int>{1}) << r.out;
  } else {
    EXPECT_NE(r.err.find("pstrain launch: rank " + std::to_string(victim) +
                         " was killed by signal 9; the others go on"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("standby of rank " + std::to_string(victim) +
                         ": took its shard over at version"),
              std::string::npos)
        << r.err;
  }
  const auto summary = FindEvent(r.out, "summary");
  EXPECT_EQ(summary["steps"], kSteps) << summary;
  EXPECT_EQ(summary["workers_lost"], 0) << summary;
  EXPECT_LT(MaxAbsDiff(dir.File("whole.pt"), dir.File("killed.pt")), 1e-6);
  EXPECT_EQ(summary["test_accuracy"],
            FindEvent(whole.out, "summary")["test_accuracy"]);
  EXPECT_LE(LongestStall(r.out), 2 * kDeadAfter);
}

INSTANTIATE_TEST_SUITE_P(Servers, ReplicasTest, ::testing::Values(0, 1, 2),
                         [](const auto& info) {
                           return "rank_" + std::to_string(info.param);
                         });

// A server stopped (SIGSTOP) for three times --dead_after: its kernel
// answers TCP's probes, but it sends rank 0 no heartbeats, so rank 0 ends
// its term and its standby takes the shard over while it is stopped; the
// workers, who hear nothing from it, send their step there. When it runs
// again it reads rank 0's line, serves nothing more and exits with that
// line, naming its old term. The run ends as one that lost no server.
TEST(ReplicasStopTest, AStoppedServerIsFencedAndTheRunIsUnchanged) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto whole = RunPstrain(LaunchArgs(dir, "whole.pt"), 180);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;

  const std::string go = dir.File("go");
  Process launch(Held(LaunchArgs(dir, "stopped.pt"), kSteps - 5, go));
  const int pid = WaitForStep(launch, 1, 5);
  ASSERT_GT(pid, 0) << launch.OutSoFar();
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  const auto stopped = std::chrono::steady_clock::now();
  const bool taken =
      launch.WaitForErr("standby of rank 1: took its shard over", 120);
  std::this_thread::sleep_until(stopped +
                                std::chrono::duration<double>(3 * kDeadAfter));
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  ASSERT_TRUE(taken) << launch.OutSoFar();
  std::ofstream(go).close();
  auto r = launch.Wait(180);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("[rank 1] pstrain: error: server 1 stops serving: "
                       "rank 0 heard nothing from rank 1 for 3 s "
                       "(--dead_after): its term 1 as server 1 is over"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("pstrain launch: rank 1 exited with status 1; the "
                       "others go on"),
            std::string::npos)
      << r.err;
  const auto summary = FindEvent(r.out, "summary");
  EXPECT_EQ(summary["steps"], kSteps) << summary;
  EXPECT_EQ(summary["workers_lost"], 0) << summary;
  EXPECT_LT(MaxAbsDiff(dir.File("whole.pt"), dir.File("stopped.pt")), 1e-6);
  EXPECT_EQ(summary["test_accuracy"],
            FindEvent(whole.out, "summary")["test_accuracy"]);
}

// --rejoin under launch --restart_servers: rank 1 is killed and its
// standby on rank 2 takes shard 1 over; launch starts rank 1 again with
// --rejoin, and it becomes a standby of shard 1 (and of shard 0, as
// before), brought up to date while the job runs; then rank 2 is killed,
// and the rejoined rank 1 takes shard 1 back (rank 0 takes shard 2). Shard
// 1 outlives two deaths with --replicas 2, and the run ends with the final
// parameters of a run that lost no server.
TEST(ReplicasChainTest, ARestartedServerRejoinsAsAStandbyAndTakesOver) {
  constexpr int kLong = 200;
  ScratchDir dir;
  ASSERT_NO_FATAL_FAILURE(RunWhole(dir, kLong));

  const std::string go = dir.File("go");
  Process launch(Restarting(dir, "rejoined.pt", kLong, go));
  const int one = WaitForStep(launch, 1, 20);
  const int two = WaitForStep(launch, 2, 20);
  ASSERT_GT(one, 0) << launch.OutSoFar();
  ASSERT_GT(two, 0);
  ASSERT_EQ(kill(one, SIGKILL), 0);
  // The new rank 1's own line: rank 2's standby of shard 1 logged its
  // first copy too.
  ASSERT_TRUE(
      launch.WaitForErr("[rank 1] standby of rank 1: holds version", 60))
      << launch.OutSoFar();
  ASSERT_EQ(kill(two, SIGKILL), 0);
  std::ofstream(go).close();

  auto r = launch.Wait(240);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("pstrain launch: rank 1 was killed by signal 9; the "
                       "others go on; starting it again"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rejoins the job as a standby of its shard"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("[rank 1] standby of rank 1: took its shard over at "
                       "version"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("standby of rank 2: took its shard over at version"),
            std::string::npos)
      << r.err;
  const auto summary = FindEvent(r.out, "summary");
  EXPECT_EQ(summary["steps"], kLong) << summary;
  EXPECT_EQ(summary["workers_lost"], 0) << summary;
  EXPECT_LT(MaxAbsDiff(dir.File("whole.pt"), dir.File("rejoined.pt")), 1e-6);
}

// Rank 1 and its standby's rank 2 both die: shard 1 has no copy left, and
// rank 0 ends the job in one line naming it.
// The master dies twice under launch --restart_servers: rank 0 is killed,
// launch names rank 1 master and starts rank 0 again, which rejoins as a
// standby of its own shard and of shard 2; then rank 1, master and server
// 1 at once, is killed: launch names rank 0 master again, and rank 2's
// claim of shard 1, which the new master holds until it knows server 1
// died with its predecessor, wins. The run ends as one that lost no
// server, with one summary, the last master's.
TEST(ReplicasChainTest, TheMasterDiesTwiceAndTheRunIsUnchanged) {
  constexpr int kLong = 200;
  ScratchDir dir;
  ASSERT_NO_FATAL_FAILURE(RunWhole(dir, kLong));

  const std::string go = dir.File("go");
  Process launch(Restarting(dir, "masters.pt", kLong, go));
  const int zero = WaitForStep(launch, 0, 20);
  const int one = WaitForStep(launch, 1, 20);
  ASSERT_GT(zero, 0) << launch.OutSoFar();
  ASSERT_GT(one, 0);
  ASSERT_EQ(kill(zero, SIGKILL), 0);
  ASSERT_TRUE(
      launch.WaitForErr("[rank 0] standby of rank 0: holds version", 60))
      << launch.OutSoFar();
  ASSERT_TRUE(
      launch.WaitForErr("[rank 0] standby of rank 2: holds version", 60))
      << launch.OutSoFar();
  ASSERT_EQ(kill(one, SIGKILL), 0);
  std::ofstream(go).close();

  auto r = launch.Wait(240);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("pstrain launch: rank 0 was killed by signal 9; rank "
                       "1 is the master now; starting rank 0 again"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("pstrain launch: rank 1 was killed by signal 9; rank "
                       "0 is the master now; starting rank 1 again"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("[rank 2] standby of rank 1: took its shard over at "
                       "version"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ServerSummaries(r.out), std::vector<int>{0}) << r.out;
  const auto summary = FindEvent(r.out, "summary");
  EXPECT_EQ(summary["steps"], kLong) << summary;
  EXPECT_EQ(summary["workers_lost"], 0) << summary;
  EXPECT_LT(MaxAbsDiff(dir.File("whole.pt"), dir.File("masters.pt")), 1e-6);
}

TEST(ReplicasChainTest, AShardWithNoSurvivorEndsTheJobNamingIt) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  Process launch(WithBin(LaunchArgs(dir, "lost.pt", 1, 100000)));
  const int one = WaitForStep(launch, 1, 3);
  const int two = WaitForStep(launch, 2, 3);
  ASSERT_GT(one, 0);
  ASSERT_GT(two, 0);
  ASSERT_EQ(kill(two, SIGKILL), 0);
  ASSERT_EQ(kill(one, SIGKILL), 0);
  auto r = launch.Wait(120);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("is lost: rank "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(server) died and no standby took it over"),
            std::string::npos)
      << r.err;
}

TEST(ReplicasChainTest, MoreReplicasThanServersExits2) {
  auto r = RunPstrain(
      {"launch", "--world_size", "4", "--num_servers", "2", "--replicas", "3"},
      30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--replicas 3: expected 1..2 (at most --num_servers "
                       "copies of a shard)"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace pstrain::testing
