// Evaluation off the critical path: --target_accuracy stops a run at the
// first evaluation that reaches it (and that version is the checkpoint);
// periodic evaluations and checkpoints work with several servers, which
// survive being killed and resumed; a slow evaluator loses no worker and
// changes no parameter.

#include <signal.h>

#include <chrono>
#include <future>
#include <memory>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "job_test.h"
#include "ps/rank/server_rank.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;
using nlohmann::json;

std::vector<json> Events(const std::string& out, const std::string& name) {
  std::vector<json> events;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    auto e = json::parse(line, nullptr, false);
    if (e.is_object() && e.value("event", "") == name)
      events.push_back(e);
  }
  return events;
}

// Real Fashion-MNIST, where accuracy means something: an mlp passes 0.70
// within a few hundred steps.
TEST(TargetAccuracyTest, StopsAtTheFirstEvaluationThatReachesIt) {
  ScratchDir dir;
  auto r = RunPstrain(
      {"launch", "--world_size", "3", "--model", "mlp", "--max_steps", "3000",
       "--eval_interval", "20", "--target_accuracy", "0.7", "--master_port",
       "0", "--checkpoint", dir.File("m.pt"), "--json"},
      300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json summary = FindEvent(r.out, "summary");
  ASSERT_TRUE(summary["target_reached"].get<bool>()) << summary;
  EXPECT_EQ(summary["target_accuracy"], 0.7);
  const uint64_t reached = summary["steps_to_target"].get<uint64_t>();
  EXPECT_GT(summary["time_to_target_seconds"].get<double>(), 0);
  // Every evaluation before the one that reached it was below, and the run
  // stopped well before its 3000 steps.
  bool found = false;
  for (const json& e : Events(r.out, "eval")) {
    const uint64_t v = e["version"].get<uint64_t>();
    if (v < reached) {
      EXPECT_LT(e["test_accuracy"].get<double>(), 0.7) << e;
    }
    if (v == reached) {
      found = true;
      EXPECT_GE(e["test_accuracy"].get<double>(), 0.7);
      EXPECT_EQ(e["test_accuracy"], summary["test_accuracy"]);
    }
  }
  EXPECT_TRUE(found) << r.out;
  EXPECT_LT(summary["steps"].get<uint64_t>(), 3000u);
  EXPECT_EQ(summary["checkpoint_version"].get<uint64_t>(), reached);
  int stopped = 0;
  for (const json& s : Events(r.out, "summary"))
    stopped += s.value("stopped_early", false);
  EXPECT_EQ(stopped, 2);  // both workers
  // The checkpoint is the version that reached the target.
  auto e =
      RunPstrain({"eval", "--checkpoint", dir.File("m.pt"), "--json"}, 120);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(FindEvent(e.out, "eval")["test_accuracy"],
            summary["test_accuracy"]);
}

TEST(TargetAccuracyTest, ATargetNeverReachedIsSaidAndTheRunSucceeds) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto r = RunPstrain({"launch",
                       "--world_size",
                       "3",
                       "--model",
                       "mlp",
                       "--max_steps",
                       "30",
                       "--batch_size",
                       "8",
                       "--eval_interval",
                       "10",
                       "--target_accuracy",
                       "0.999",
                       "--master_port",
                       "0",
                       "--data_dir",
                       dir.path(),
                       "--checkpoint",
                       dir.File("m.pt"),
                       "--json"},
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json summary = FindEvent(r.out, "summary");
  EXPECT_FALSE(summary["target_reached"].get<bool>());
  EXPECT_TRUE(summary["time_to_target_seconds"].is_null());
  EXPECT_TRUE(summary["steps_to_target"].is_null());
  EXPECT_EQ(summary["steps"], 30);
  EXPECT_EQ(summary["checkpoint_version"], 30);
  EXPECT_NE(r.err.find("--target_accuracy 0.999000 not reached"),
            std::string::npos)
      << r.err;
}

// Periodic evaluations of a model split over two servers, each of a whole
// sync version: every slice at the version the event names.
TEST(SeveralServersTest, EvaluateAndCheckpointTheWholeModel) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto r = RunPstrain({"launch",
                       "--world_size",
                       "4",
                       "--num_servers",
                       "2",
                       "--model",
                       "mlp",
                       "--batch_size",
                       "8",
                       "--max_steps",
                       "60",
                       "--eval_interval",
                       "10",
                       "--slice_bytes",
                       "65536",
                       "--master_port",
                       "0",
                       "--data_dir",
                       dir.path(),
                       "--checkpoint",
                       dir.File("m.pt"),
                       "--json"},
                      180);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto evals = Events(r.out, "eval");
  ASSERT_GE(evals.size(), 2u) << r.out;  // a periodic one, and the final one
  EXPECT_LT(evals.front()["version"].get<uint64_t>(), 60u);
  // Sync snapshots are asked for ahead, so each is the version asked for;
  // the one of the last version scores as the final, merged model does.
  for (const json& e : evals) {
    EXPECT_EQ(e["samples"], 100);
    EXPECT_EQ(e["version"].get<uint64_t>() % 10, 0u) << e;
    if (e["version"] == 60) {
      EXPECT_EQ(e["test_accuracy"], evals.back()["test_accuracy"]);
    }
  }
}

std::vector<std::string> World(const std::string& port, const ScratchDir& dir) {
  return {"--world_size",  "5",        "--num_servers", "2",
          "--master_port", port,       "--threads",     "1",
          "--data_dir",    dir.path(), "--json"};
}

// Both servers of a job are killed mid-run and started again with
// --resume auto: they go on from the newest complete checkpoint (every
// server's part written), and the workers find them, the second server at
// its new port, and finish. Rank 0 starts on a port the kernel picks and
// starts again on that same one, where the workers look for it.
TEST(SeveralServersTest, SurviveAKillOfBothServersWithResumeAuto) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto serve = [&](int rank, const std::string& port) {
    return std::make_unique<Process>(
        Concat(Concat({PstrainBin(), "serve", "--rank", std::to_string(rank),
                       "--model", "mlp", "--batch_size", "8", "--epochs", "4",
                       "--checkpoint", dir.File("m.pt"), "--checkpoint_every",
                       "5", "--resume", "auto", "--slice_bytes", "65536"},
                      World(port, dir)),
               {}));
  };
  auto rank0 = serve(0, "0");
  const std::string port = std::to_string(rank0->ListenPort(30));
  auto rank1 = serve(1, port);
  std::vector<std::unique_ptr<Process>> workers;
  for (int r = 2; r <= 4; ++r) {
    workers.push_back(std::make_unique<Process>(
        Concat({PstrainTestingBin(), "work", "--rank", std::to_string(r),
                "--delay_ms", "30", "--reconnect_timeout", "60"},
               World(port, dir))));
  }
  ASSERT_TRUE(rank0->WaitForErr("rank 4 joined", 60));
  // Killed once a periodic checkpoint is complete (every server's part
  // written), however slow the machine is today: a fixed wait may end
  // before the first one, and the servers would then start afresh.
  ASSERT_FALSE(WaitForCheckpoint(dir.File("m.pt"), 60).second.empty())
      << rank0->OutSoFar();
  // Rank 1 first: the workers see it go before rank 0 goes too, and rank 0
  // may end first on its own (exit 1: a server lost before it sent its
  // slices fails the run), telling the workers so.
  rank1->Signal(SIGKILL);
  for (auto& w : workers)
    ASSERT_TRUE(w->WaitForErr("lost rank ", 60)) << w->OutSoFar();
  rank0->Signal(SIGKILL);
  const int first_end = rank0->Wait(10).exit_code;
  EXPECT_TRUE(first_end == 1 || first_end == 128 + SIGKILL) << first_end;
  EXPECT_EQ(rank1->Wait(10).exit_code, 128 + SIGKILL);
  auto again0 = serve(0, port);
  auto again1 = serve(1, port);
  auto r0 = again0->Wait(180);
  ASSERT_EQ(r0.exit_code, 0) << r0.err;
  auto r1 = again1->Wait(30);
  EXPECT_EQ(r1.exit_code, 0) << r1.err;
  EXPECT_NE(r0.err.find("--resume auto: " + dir.path()), std::string::npos)
      << r0.err;
  for (auto& w : workers) {
    auto r = w->Wait(60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("reconnected; going on from version"),
              std::string::npos)
        << r.err;
  }
  EXPECT_EQ(FindEvent(r0.out, "summary")["steps"], 104);
}

// The life of rank 0 in this process, with a stand-in evaluator that takes
// `eval_seconds` per evaluation; two workers as processes.
json ServeInProcess(const ScratchDir& dir, const std::string& checkpoint,
                    int64_t eval_interval, double eval_seconds) {
  ps::ServerRankOptions o;
  o.rank = 0;
  o.world_size = 3;
  o.master_addr = "127.0.0.1";
  o.master_port = 0;
  o.spec.model = "mlp";
  o.spec.batch_size = 8;
  o.spec.max_steps = 40;
  o.spec.world_size = 3;
  o.spec.eval_interval = eval_interval;
  o.spec.heartbeat = 0.2;
  o.spec.dead_after = 1;
  o.data_dir = dir.path();
  o.threads = 1;
  o.checkpoint = checkpoint;
  o.make_scorer = [eval_seconds](const ps::JobSpec&) -> Result<ps::ScoreFn> {
    return ps::ScoreFn([eval_seconds](const models::NamedTensors& state)
                           -> Result<models::EvalResult> {
      std::this_thread::sleep_for(std::chrono::duration<double>(eval_seconds));
      models::EvalResult r;
      r.samples = static_cast<int64_t>(state.size());
      return r;
    });
  };
  std::promise<int> port;
  o.on_listen = [&port](int p) { port.set_value(p); };
  std::ostringstream out, err;
  report::EventLogOptions log_options;
  log_options.json = true;
  log_options.out = &out;
  log_options.err = &err;
  report::EventLog log(log_options);
  auto served = std::async(std::launch::async,
                           [&] { return ps::RunServerRank(o, &log); });
  const std::string p = std::to_string(port.get_future().get());
  std::vector<std::unique_ptr<Process>> workers;
  for (int r = 1; r <= 2; ++r) {
    workers.push_back(std::make_unique<Process>(std::vector<std::string>{
        PstrainBin(), "work", "--rank", std::to_string(r), "--world_size", "3",
        "--master_addr", "127.0.0.1", "--master_port", p, "--threads", "1",
        "--data_dir", dir.path(), "--json"}));
  }
  Status s = served.get();
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << err.str();
  for (auto& w : workers)
    EXPECT_EQ(w->Wait(60).exit_code, 0);
  json summary = FindEvent(out.str(), "summary");
  summary["evals"] = Events(out.str(), "eval").size();
  return summary;
}

// Each evaluation holds for longer than --dead_after: no worker is lost, and
// the parameters are those of the same run without evaluation.
TEST(SlowEvaluatorTest, LosesNoWorkerAndChangesNoParameter) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  const json slow = ServeInProcess(dir, dir.File("slow.pt"), 10, 1.5);
  EXPECT_EQ(slow["workers_lost"], 0);
  EXPECT_EQ(slow["steps"], 40);
  EXPECT_GE(slow["evals"].get<int>(), 2);  // a periodic one, and the final one
  const json plain = ServeInProcess(dir, dir.File("plain.pt"), 0, 0.0);
  EXPECT_EQ(plain["evals"], 1);
  EXPECT_EQ(MaxAbsDiff(dir.File("slow.pt"), dir.File("plain.pt")), 0.0);
}

}  // namespace
}  // namespace pstrain::testing
