// Membership: a worker killed mid-job leaves the sync quorum and the others
// go on; the same rank started again rejoins at the current version; a
// worker that falls silent is lost after --dead_after.

#include <signal.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

std::vector<std::string> World(const std::string& port, const ScratchDir& dir) {
  return {"--world_size", "4",        "--master_port", port, "--threads", "1",
          "--data_dir",   dir.path(), "--json"};
}

// Rank 0 of an mlp job of three workers of batch 8; 26 steps per epoch.
std::vector<std::string> ServeArgs(const std::string& port,
                                   const ScratchDir& dir,
                                   const std::vector<std::string>& flags) {
  return Concat(Concat({PstrainBin(), "serve", "--rank", "0", "--model", "mlp",
                        "--batch_size", "8", "--checkpoint", dir.File("m.pt")},
                       World(port, dir)),
                flags);
}

// pstrain_testing, for its --delay_ms.
std::unique_ptr<Process> StartWorker(const std::string& port,
                                     const ScratchDir& dir, int rank,
                                     const std::vector<std::string>& flags) {
  return std::make_unique<Process>(Concat(
      Concat({PstrainTestingBin(), "work", "--rank", std::to_string(rank)},
             World(port, dir)),
      flags));
}

// Every worker holds before step `step` until the file `go` exists: the
// run is alive for whatever the test does before it creates `go`, on a
// machine of any speed.
std::vector<std::string> HoldAt(int step, const std::string& go) {
  return {"--hold_before_step", std::to_string(step), "--hold_until", go};
}

// Waits up to a minute for every worker to join and for `worker` to log
// its first step (--log_interval 10): the run is under way.
bool UnderWay(const Process& serve, const Process& worker) {
  for (int r = 1; r <= 3; ++r) {
    if (!serve.WaitForErr("rank " + std::to_string(r) + " joined", 60))
      return false;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (FindEvents(worker.OutSoFar(), "step").empty()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Ranks 1..3, each slowed by `delay_ms` per step.
std::vector<std::unique_ptr<Process>> StartWorkers(
    const std::string& port, const ScratchDir& dir, int delay_ms,
    const std::vector<std::string>& flags = {}) {
  std::vector<std::unique_ptr<Process>> workers;
  for (int r = 1; r <= 3; ++r) {
    workers.push_back(StartWorker(
        port, dir, r, Concat({"--delay_ms", std::to_string(delay_ms)}, flags)));
  }
  return workers;
}

TEST(MembershipTest, KilledWorkerLeavesTheQuorumAndRejoinsWithItsRank) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  // 4 epochs of 26 steps; the others hold before step 60 until rank 3
  // has rejoined.
  Process serve(ServeArgs("0", dir, {"--epochs", "4"}));
  const std::string port = std::to_string(serve.ListenPort(30));
  const std::string go = dir.File("go");
  auto workers = StartWorkers(port, dir, 30, HoldAt(60, go));
  auto &w1 = workers[0], &w2 = workers[1], &w3 = workers[2];
  ASSERT_TRUE(UnderWay(serve, *w1)) << w1->OutSoFar();
  w3->Signal(SIGKILL);
  EXPECT_EQ(w3->Wait(10).exit_code, 128 + SIGKILL);
  ASSERT_TRUE(serve.WaitForErr("rank 3 lost at version", 60));
  auto again = StartWorker(port, dir, 3, {"--delay_ms", "30"});
  ASSERT_TRUE(serve.WaitForErr("rank 3 rejoined at version", 60));
  std::ofstream(go).close();

  auto rs = serve.Wait(120);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_EQ(w1->Wait(30).exit_code, 0);
  EXPECT_EQ(w2->Wait(30).exit_code, 0);
  auto back = again->Wait(30);
  EXPECT_EQ(back.exit_code, 0) << back.err;
  auto summary = FindEvent(rs.out, "summary");
  EXPECT_EQ(summary["steps"], 104);
  EXPECT_EQ(summary["workers_lost"], 1);
  EXPECT_NE(rs.err.find("rank 3 lost at version"), std::string::npos) << rs.err;
  EXPECT_NE(rs.err.find("rank 3 rejoined at version"), std::string::npos)
      << rs.err;
  // The rejoined worker trained: it started at the server's version.
  auto rejoined = FindEvent(back.out, "summary");
  EXPECT_GT(rejoined["steps"].get<int>(), 0);
  EXPECT_LT(rejoined["steps"].get<int>(), 104);
}

// Whether any file of /dev/shm is pstrain's (a segment is a memfd, which
// has no name there; this holds that to account).
bool PstrainFilesInDevShm() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    if (e.path().filename().string().find("pstrain") != std::string::npos)
      return true;
  }
  return false;
}

// Workers and server on one host talk through shared memory; a worker
// killed (SIGKILL) while it trains leaves no segment behind once reaped:
// the server unmaps its end when the lifeline closes, and goes on.
TEST(MembershipTest, KilledWorkerOverSharedMemoryLeavesNoSegment) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  // Net: 4.8 MB pushes, more than a ring holds, so that the kill is likely
  // to fall while one is on its way.
  Process serve(Concat(Concat({PstrainBin(), "serve", "--rank", "0", "--model",
                               "net", "--batch_size", "8", "--epochs", "2"},
                              World("0", dir)),
                       {}));
  const std::string port = std::to_string(serve.ListenPort(30));
  // Ranks 1 and 2 hold before step 40 (of 52) until rank 3 is lost: it
  // dies while they train.
  const std::string go = dir.File("go");
  std::vector<std::unique_ptr<Process>> workers;
  for (int r = 1; r <= 2; ++r)
    workers.push_back(StartWorker(port, dir, r, HoldAt(40, go)));
  workers.push_back(StartWorker(port, dir, 3, {}));
  // Every rank's join, not only the last started one's: the three start
  // together and join in whatever order they get the CPU. A worker
  // registers only after its handover was answered, and the server maps
  // the segment before it answers, so each "joined" is one segment mapped.
  // Once rank 3 has logged a step, pushes are on their way all the time.
  ASSERT_TRUE(UnderWay(serve, *workers[2])) << workers[2]->OutSoFar();
  EXPECT_EQ(MappedShmSegments(serve.pid()), 3);
  workers[2]->Signal(SIGKILL);
  EXPECT_EQ(workers[2]->Wait(10).exit_code, 128 + SIGKILL);
  ASSERT_TRUE(serve.WaitForErr("rank 3 lost", 30));
  int mapped = -1;
  for (int i = 0; i < 100 && (mapped = MappedShmSegments(serve.pid())) != 2;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(mapped, 2);
  EXPECT_FALSE(PstrainFilesInDevShm());
  std::ofstream(go).close();
  auto rs = serve.Wait(120);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  for (int w = 0; w < 2; ++w) {
    auto r = workers[w]->Wait(30);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("to rank 0: shared memory"), std::string::npos)
        << r.err;
  }
  EXPECT_EQ(FindEvent(rs.out, "summary")["workers_lost"], 1);
}

TEST(MembershipTest, WorkerLostForGoodEndsTheJobWithTheOthers) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  Process serve(ServeArgs("0", dir, {"--epochs", "2"}));
  const std::string port = std::to_string(serve.ListenPort(30));
  const std::string go = dir.File("go");
  auto workers = StartWorkers(port, dir, 30, HoldAt(40, go));
  ASSERT_TRUE(UnderWay(serve, *workers[1])) << workers[1]->OutSoFar();
  workers[0]->Signal(SIGKILL);
  ASSERT_TRUE(serve.WaitForErr("rank 1 lost at version", 60));
  std::ofstream(go).close();
  auto rs = serve.Wait(60);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_EQ(workers[1]->Wait(30).exit_code, 0);
  EXPECT_EQ(workers[2]->Wait(30).exit_code, 0);
  auto summary = FindEvent(rs.out, "summary");
  EXPECT_EQ(summary["steps"], 52);
  EXPECT_EQ(summary["workers_lost"], 1);
  EXPECT_GT(summary["test_accuracy"].get<double>(), 0.1);
}

// A worker stopped (SIGSTOP: its connection stays open, it sends nothing)
// is lost after --dead_after, and the step goes on without it.
TEST(MembershipTest, SilentWorkerIsLostAfterDeadAfter) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  Process serve(ServeArgs(
      "0", dir, {"--epochs", "2", "--heartbeat", "0.2", "--dead_after", "1"}));
  const std::string port = std::to_string(serve.ListenPort(30));
  const std::string go = dir.File("go");
  auto workers = StartWorkers(port, dir, 20, HoldAt(40, go));
  ASSERT_TRUE(UnderWay(serve, *workers[0])) << workers[0]->OutSoFar();
  workers[2]->Signal(SIGSTOP);
  ASSERT_TRUE(serve.WaitForErr("no word from rank 3", 60));
  std::ofstream(go).close();
  auto rs = serve.Wait(60);
  workers[2]->Signal(SIGKILL);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_EQ(workers[0]->Wait(30).exit_code, 0);
  auto summary = FindEvent(rs.out, "summary");
  EXPECT_EQ(summary["steps"], 52);
  EXPECT_EQ(summary["workers_lost"], 1) << rs.err;
  EXPECT_NE(rs.err.find("no word from rank 3 for 1"), std::string::npos)
      << rs.err;
}

// The server is killed mid-run and started again with --resume auto: the
// workers reconnect on their own and the run finishes from the last
// checkpoint's version. The first server listens on a port the kernel
// picks; the second on that same one, where the workers look for it.
void ExpectWorkersReconnectToARestartedServer(
    const std::vector<std::string>& flags) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto serve_args = [&](const std::string& port) {
    return ServeArgs(
        port, dir,
        Concat({"--epochs", "4", "--checkpoint_every", "5", "--resume", "auto"},
               flags));
  };
  auto first = std::make_unique<Process>(serve_args("0"));
  const std::string port = std::to_string(first->ListenPort(30));
  auto workers = StartWorkers(port, dir, 30, {"--reconnect_timeout", "30"});
  ASSERT_TRUE(first->WaitForErr("rank 3 joined", 60));
  // Killed once a periodic checkpoint is complete, however slow the
  // machine is today.
  ASSERT_FALSE(WaitForCheckpoint(dir.File("m.pt"), 60).second.empty())
      << first->OutSoFar();
  first->Signal(SIGKILL);
  EXPECT_EQ(first->Wait(10).exit_code, 128 + SIGKILL);
  Process second(serve_args(port));
  auto rs = second.Wait(120);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_NE(rs.err.find("--resume auto: " + dir.path()), std::string::npos)
      << rs.err;
  for (auto& w : workers) {
    auto r = w->Wait(30);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("reconnected; going on from version"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(FindEvent(r.out, "summary")["reconnects"], 1);
    // Both servers were reached over shared memory (--transport auto, one
    // host): the worker moved its connection again after the restart.
    size_t moves = 0;
    for (size_t at = r.err.find("to rank 0: shared memory");
         at != std::string::npos;
         at = r.err.find("to rank 0: shared memory", at + 1))
      ++moves;
    EXPECT_EQ(moves, 2u) << r.err;
  }
  EXPECT_EQ(FindEvent(rs.out, "summary")["steps"], 104);
}

TEST(MembershipTest, WorkersReconnectToARestartedServer) {
  ExpectWorkersReconnectToARestartedServer({});
}

// --placement server: the workers send batches, and a batch lost with the
// connection is sent again for the step the restarted server resumed at.
TEST(MembershipTest, PlacedWorkersReconnectToARestartedServer) {
  ExpectWorkersReconnectToARestartedServer({"--placement", "server"});
}

// --reassign_shards: once a worker is lost, the others share the whole
// global batch of every step, so they train on more samples than their own.
TEST(MembershipTest, ReassignedShardsKeepEveryStepsGlobalBatch) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  Process serve(ServeArgs("0", dir, {"--epochs", "2", "--reassign_shards"}));
  const std::string port = std::to_string(serve.ListenPort(30));
  const std::string go = dir.File("go");
  auto workers = StartWorkers(port, dir, 30, HoldAt(20, go));
  ASSERT_TRUE(UnderWay(serve, *workers[0])) << workers[0]->OutSoFar();
  workers[2]->Signal(SIGKILL);
  ASSERT_TRUE(serve.WaitForErr("rank 3 lost at version", 60));
  std::ofstream(go).close();
  auto rs = serve.Wait(60);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_NE(rs.err.find("workers, who share its samples"), std::string::npos)
      << rs.err;
  int64_t samples = 0;
  for (int i = 0; i < 2; ++i) {
    auto r = workers[i]->Wait(30);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto summary = FindEvent(r.out, "summary");
    EXPECT_EQ(summary["steps"], 52);
    samples += summary["samples"].get<int64_t>();
  }
  // Own slices only would be 2 x 52 x 8; shared, each step after the loss
  // gives each survivor 12 samples.
  EXPECT_GT(samples, 2 * 52 * 8 + 40);
  EXPECT_LE(samples, 2 * 52 * 12);
}

}  // namespace
}  // namespace pstrain::testing
