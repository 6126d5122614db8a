#include "worker/local_trainer.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include "testing/idx_files.h"

namespace pstrain::worker {
namespace {

using data::testing::ScratchDir;

LocalTrainOptions Tiny(const std::string& dir) {
  LocalTrainOptions o;
  o.job.model = "mlp";
  o.data_dir = dir;
  o.steps = 30;  // 3 epochs of 10 steps: epochs follow one another
  o.job.batch_size = 8;
  return o;
}

TEST(LocalTrainerTest, TrainsTheStepsAndScoresTheTestSet) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 80, 40);
  auto s = TrainLocally(Tiny(dir.path()));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->steps, 30);
  EXPECT_EQ(s->samples, 240);
  EXPECT_GT(s->wall_seconds, 0);
  EXPECT_DOUBLE_EQ(s->samples_per_second, 240 / s->wall_seconds);
  EXPECT_GE(s->test_accuracy, 0);
  EXPECT_LE(s->test_accuracy, 1);
  EXPECT_GT(s->test_loss, 0);
}

TEST(LocalTrainerTest, RepeatsForTheSameSeed) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 80, 40);
  auto a = TrainLocally(Tiny(dir.path()));
  auto b = TrainLocally(Tiny(dir.path()));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->test_loss, b->test_loss);
}

TEST(LocalTrainerTest, RunsOnTheThreadsAskedForAndRestoresTheCount) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 80, 40);
  const int before = at::get_num_threads();
  LocalTrainOptions o = Tiny(dir.path());
  o.threads = before + 1;
  auto s = TrainLocally(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->threads, before + 1);
  EXPECT_EQ(at::get_num_threads(), before);
}

TEST(LocalTrainerTest, RejectsBadOptionsAndMissingData) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 80, 40);
  LocalTrainOptions o = Tiny(dir.path());
  o.job.batch_size = 81;
  EXPECT_EQ(TrainLocally(o).status().code(), StatusCode::kInvalidArgument);
  o = Tiny(dir.path());
  o.steps = 0;
  EXPECT_EQ(TrainLocally(o).status().code(), StatusCode::kInvalidArgument);
  o = Tiny(dir.path());
  o.job.model = "resnet";
  EXPECT_EQ(TrainLocally(o).status().code(), StatusCode::kInvalidArgument);
  o = Tiny(dir.path() + "/none");
  EXPECT_EQ(TrainLocally(o).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace pstrain::worker
