// Training through real processes: sync mode is the computation of one
// process on the combined batch; launch equals serve + work; eval equals the
// training's own score.

#include <cmath>
#include <memory>
#include <tuple>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/dataset.h"
#include "data/sampler.h"
#include "job_test.h"
#include "models/model_zoo.h"
#include "ps/store/checkpoint.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

constexpr int kBatch = 8;
constexpr int kSteps = 20;
constexpr double kLr = 0.05;
constexpr double kAdamLr = 1e-3;
constexpr double kMomentum = 0.9;
constexpr uint64_t kSeed = 3;

double LrOf(const std::string& optimizer) {
  return optimizer == "adam" ? kAdamLr : kLr;
}

// One process, no parameter server: libtorch's SGD (momentum kMomentum) or
// Adam (its defaults) on batches of 2b.
ps::NamedTensors TrainSingleProcess(const std::string& model_name,
                                    const std::string& data_dir,
                                    const std::string& optimizer = "sgd") {
  torch::manual_seed(kSeed);
  auto model = models::MakeModel(model_name);
  EXPECT_TRUE(model.ok());
  auto train =
      data::LoadDataset("fashion-mnist", data_dir, data::Split::kTrain);
  EXPECT_TRUE(train.ok()) << train.status().ToString();
  data::ShardSampler sampler(train->size(), 1, 0, 2 * kBatch, kSeed);
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (optimizer == "adam") {
    opt = std::make_unique<torch::optim::Adam>(
        (*model)->parameters(), torch::optim::AdamOptions(kAdamLr));
  } else {
    opt = std::make_unique<torch::optim::SGD>(
        (*model)->parameters(),
        torch::optim::SGDOptions(kLr).momentum(kMomentum));
  }
  (*model)->train();
  const double base_lr = optimizer == "adam" ? kAdamLr : kLr;
  for (int step = 0; step < kSteps; ++step) {
    // --lr_schedule auto: a cosine to 0 over the run's kSteps.
    for (auto& group : opt->param_groups())
      group.options().set_lr(0.5 * base_lr *
                             (1 + std::cos(M_PI * step / kSteps)));
    auto batch = data::GetBatch(*train, sampler.BatchIndices(0, step));
    opt->zero_grad();
    torch::nll_loss((*model)->forward(batch.images), batch.labels).backward();
    opt->step();
  }
  ps::NamedTensors out;
  for (const auto& item : (*model)->named_parameters()) {
    out.emplace_back(item.key(), item.value().detach().clone());
  }
  return out;
}

std::vector<std::string> JobFlags(const std::string& model,
                                  const ScratchDir& dir,
                                  const std::string& optimizer = "sgd") {
  return {"--model",      model,
          "--optimizer",  optimizer,
          "--batch_size", std::to_string(kBatch),
          "--max_steps",  std::to_string(kSteps),
          "--lr",         std::to_string(LrOf(optimizer)),
          "--momentum",   std::to_string(kMomentum),
          "--seed",       std::to_string(kSeed),
          "--data_dir",   dir.path(),
          "--json"};
}

// (model, optimizer).
class SyncEquivalenceTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(SyncEquivalenceTest, TwoWorkersOfBatchBEqualOneProcessOfBatch2B) {
  const auto& [model, optimizer] = GetParam();
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto r = RunPstrain(Concat({"launch", "--world_size", "3", "--master_port",
                              "0", "--checkpoint", dir.File("sync.pt")},
                             JobFlags(model, dir, optimizer)),
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(FindEvent(r.out, "summary")["steps"], kSteps) << r.out;

  ps::NamedTensors single = TrainSingleProcess(model, dir.path(), optimizer);
  ASSERT_TRUE(ps::SaveCheckpoint(dir.File("single.pt"), single, {}).ok());
  EXPECT_LT(MaxAbsDiff(dir.File("sync.pt"), dir.File("single.pt")), 1e-5);

  // The test can fail: training moved the parameters far beyond 1e-5.
  torch::manual_seed(kSeed);
  auto init = models::MakeModel(model);
  ps::NamedTensors initial;
  for (const auto& item : (*init)->named_parameters()) {
    initial.emplace_back(item.key(), item.value().detach());
  }
  ASSERT_TRUE(ps::SaveCheckpoint(dir.File("init.pt"), initial, {}).ok());
  EXPECT_GT(MaxAbsDiff(dir.File("sync.pt"), dir.File("init.pt")), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Models, SyncEquivalenceTest,
                         ::testing::Values(std::make_tuple("mlp", "sgd"),
                                           std::make_tuple("convnet", "sgd"),
                                           std::make_tuple("mlp", "adam")),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::get<1>(info.param);
                         });

TEST(LaunchTest, LaunchEqualsServePlusWorkInSeparateProcesses) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto flags = JobFlags("mlp", dir);
  auto launched =
      RunPstrain(Concat({"launch", "--world_size", "3", "--master_port", "0",
                         "--checkpoint", dir.File("launch.pt")},
                        flags),
                 120);
  ASSERT_EQ(launched.exit_code, 0) << launched.err;

  auto world = [](const std::string& port) {
    return std::vector<std::string>{"--world_size", "3", "--master_port", port,
                                    "--threads",    "1"};
  };
  Process serve(Concat(Concat({PstrainBin(), "serve", "--rank", "0",
                               "--checkpoint", dir.File("serve.pt")},
                              world("0")),
                       flags));
  const std::string port = std::to_string(serve.ListenPort(30));
  Process w1(
      Concat({PstrainBin(), "work", "--rank", "1", "--data_dir", dir.path()},
             world(port)));
  Process w2(
      Concat({PstrainBin(), "work", "--rank", "2", "--data_dir", dir.path()},
             world(port)));
  auto rs = serve.Wait(120);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_EQ(w1.Wait(30).exit_code, 0);
  EXPECT_EQ(w2.Wait(30).exit_code, 0);
  EXPECT_EQ(MaxAbsDiff(dir.File("launch.pt"), dir.File("serve.pt")), 0.0);
  EXPECT_EQ(FindEvent(launched.out, "summary")["test_accuracy"],
            FindEvent(rs.out, "summary")["test_accuracy"]);
}

TEST(LaunchTest, EvalPrintsTheSummarysAccuracyOnRealData) {
  const std::string fmnist = data::DefaultDataDir("fashion-mnist");
  ScratchDir dir;
  auto r = RunPstrain(
      {"launch", "--world_size", "3", "--model", "mlp", "--max_steps", "30",
       "--master_port", "0", "--json", "--checkpoint", dir.File("m.pt")},
      180);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto summary = FindEvent(r.out, "summary");
  ASSERT_FALSE(summary.is_null()) << r.out;
  EXPECT_GT(summary["test_accuracy"].get<double>(), 0.5);  // learned something
  auto e =
      RunPstrain({"eval", "--checkpoint", dir.File("m.pt"), "--json"}, 120);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  auto eval = FindEvent(e.out, "eval");
  EXPECT_EQ(eval["test_accuracy"], summary["test_accuracy"]);
  EXPECT_NEAR(eval["test_loss"].get<double>(),
              summary["test_loss"].get<double>(), 1e-6);
  EXPECT_EQ(eval["samples"], 10000);
}

// Sync pushes stream through a bounded chunk per connection into one
// accumulator per key: 8 workers cost the server little more than 2.
TEST(LaunchTest, SyncServerMemoryDoesNotGrowWithWorkers) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto peak = [&](int workers) {
    auto r = RunPstrain(
        {"launch", "--world_size", std::to_string(workers + 1), "--model",
         "net", "--batch_size", "4", "--max_steps", "5", "--master_port", "0",
         "--data_dir", dir.path(), "--json", "--checkpoint", dir.File("m.pt")},
        300);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return FindEvent(r.out, "summary")["peak_rss_bytes"].get<double>();
  };
  const double two = peak(2), eight = peak(8);
  EXPECT_GT(two, 0);
  EXPECT_LE(eight, 1.2 * two) << "2 workers: " << two << " bytes, 8: " << eight;
}

TEST(LaunchTest, AsyncModeTrainsAndReportsEveryPush) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto flags = JobFlags("mlp", dir);
  auto r = RunPstrain(
      Concat({"launch", "--world_size", "4", "--mode", "async", "--master_port",
              "0", "--checkpoint", dir.File("a.pt")},
             flags),
      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Async: every push of every worker makes a version.
  EXPECT_EQ(FindEvent(r.out, "summary")["steps"], 3 * kSteps);
}

}  // namespace
}  // namespace pstrain::testing
