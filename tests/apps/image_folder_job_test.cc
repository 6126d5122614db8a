// A ResNet trained on an image folder by two workers: a corrupt file is
// skipped and counted once, the server's BatchNorm buffers after a sync
// step are the mean of the two workers', and `eval` of the checkpoint gives
// the accuracy the run reported; with one server and with two, where each
// buffer lives on the server its key is planned to.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/sampler.h"
#include "data/source.h"
#include "job_test.h"
#include "models/model_state.h"
#include "models/model_zoo.h"
#include "ps/store/checkpoint.h"
#include "testing/idx_files.h"
#include "testing/image_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;
using nlohmann::json;

constexpr int kSeed = 5;
constexpr int kBatch = 8;  // per worker: 2 x 8 = the 16 training files

// The state one worker's forward leaves: the job's initial model (seeded as
// every rank seeds it) run in train mode on that worker's first batch.
std::vector<models::StateTensor> WorkerState(const std::string& dir,
                                             int worker) {
  data::SourceOptions o;
  o.dataset = "imagefolder";
  o.data_dir = dir;
  o.image_size = 32;
  o.seed = kSeed;
  auto source = data::OpenSource(o, data::Split::kTrain);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ((*source)->size(), 16);
  data::ShardSampler sampler((*source)->size(), 2, worker, kBatch, kSeed);
  data::Batch batch = (*source)->Get(sampler.BatchIndices(0, 0), 0);
  torch::manual_seed(kSeed);
  auto model = models::MakeModel("resnet18", {3, 32, 3});
  EXPECT_TRUE(model.ok());
  (*model)->train();
  torch::NoGradGuard no_grad;
  (*model)->forward(batch.images);
  return models::ModelState(**model);
}

class ImageFolderJobTest : public ::testing::TestWithParam<int> {};

TEST_P(ImageFolderJobTest, SkipsTheCorruptFileAndAveragesTheBuffers) {
  const int servers = GetParam();
  ScratchDir dir;
  data::testing::WriteImageFolder(dir.path(), {"cat", "dog", "fox"}, 5, 32,
                                  /*with_corrupt=*/false);
  data::testing::WriteFile(dir.path() + "/train/dog/broken.jpg",
                           "this is not a JPEG\n");
  const std::string checkpoint = dir.File("resnet.pt");
  auto r = RunPstrain({"launch",
                       "--world_size",
                       std::to_string(servers + 2),
                       "--num_servers",
                       std::to_string(servers),
                       "--model",
                       "resnet18",
                       "--dataset",
                       "imagefolder",
                       "--data_dir",
                       dir.path(),
                       "--image_size",
                       "32",
                       "--batch_size",
                       std::to_string(kBatch),
                       "--max_steps",
                       "1",
                       "--seed",
                       std::to_string(kSeed),
                       "--master_port",
                       "0",
                       "--checkpoint",
                       checkpoint,
                       "--json"},
                      300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json summary = FindEvent(r.out, "summary");
  EXPECT_EQ(summary["skipped_samples"], 1) << summary;
  EXPECT_EQ(summary["samples"], 15) << summary;
  EXPECT_NE((r.out + r.err)
                .find("skipping corrupt image " + dir.path() +
                      "/train/dog/broken.jpg"),
            std::string::npos)
      << r.err;

  auto saved = ps::LoadCheckpointTensors(checkpoint);
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  std::map<std::string, torch::Tensor> by_name(saved->begin(), saved->end());
  const auto w0 = WorkerState(dir.path(), 0);
  const auto w1 = WorkerState(dir.path(), 1);
  ASSERT_EQ(w0.size(), by_name.size());
  int buffers = 0;
  for (size_t k = 0; k < w0.size(); ++k) {
    if (!w0[k].is_buffer)
      continue;
    ++buffers;
    const torch::Tensor& server = by_name.at(w0[k].name);
    if (w0[k].value.is_floating_point()) {
      const torch::Tensor mean = (w0[k].value + w1[k].value) / 2;
      EXPECT_TRUE(torch::allclose(server, mean, 1e-4, 1e-5))
          << w0[k].name << ": server " << server.flatten().slice(0, 0, 4)
          << " workers' mean " << mean.flatten().slice(0, 0, 4);
      // The buffers moved: the check is not between two defaults.
      EXPECT_FALSE(torch::allclose(w0[k].value, w1[k].value)) << w0[k].name;
    } else {
      EXPECT_EQ(server.item<int64_t>(), 1) << w0[k].name;
    }
  }
  EXPECT_EQ(buffers, 20 * 3);  // resnet18: 20 BatchNorms

  auto e = RunPstrain(
      {"eval", "--checkpoint", checkpoint, "--data_dir", dir.path(), "--json"},
      300);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const json eval = FindEvent(e.out, "eval");
  EXPECT_EQ(eval["samples"], 15) << eval;
  EXPECT_EQ(eval["test_accuracy"], summary["test_accuracy"]) << eval;
  EXPECT_EQ(eval["test_loss"].get<double>(),
            summary["test_loss"].get<double>());
}

INSTANTIATE_TEST_SUITE_P(Servers, ImageFolderJobTest, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "_servers";
                         });

}  // namespace
}  // namespace pstrain::testing
