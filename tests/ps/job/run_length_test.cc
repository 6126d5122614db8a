#include "ps/job/run_length.h"

#include <limits>
#include <sstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "testing/idx_files.h"

namespace pstrain::ps {
namespace {

using data::testing::ScratchDir;

TEST(RunLengthTest, StepsPerWorkerIsEpochsCappedByMaxSteps) {
  JobSpec spec;
  spec.epochs = 3;
  EXPECT_EQ(StepsPerWorker(spec, 100), 300);
  spec.max_steps = 250;
  EXPECT_EQ(StepsPerWorker(spec, 100), 250);
  spec.max_steps = 1000;
  EXPECT_EQ(StepsPerWorker(spec, 100), 300);
  spec.max_steps = 0;
  spec.epochs = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_EQ(StepsPerWorker(spec, 100), std::numeric_limits<int64_t>::max());
}

TEST(RunLengthTest, CountsAWorkersShardOfTheImages) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 1000, 10);
  JobSpec spec;
  spec.world_size = 4;  // 3 workers of 32: floor(1000 / 96)
  EXPECT_EQ(*StepsPerEpoch(spec, dir.path(), nullptr), 10);
  spec.batch_size = 400;
  EXPECT_EQ(StepsPerEpoch(spec, dir.path(), nullptr).status().message(),
            "--batch_size 400 x 3 workers: an epoch of the training split "
            "has no step");
}

TEST(RunLengthTest, CountsAWorkersBpttWindows) {
  data::TextCorpus corpus;
  corpus.train = torch::arange(1000, torch::kLong);
  JobSpec spec;
  spec.dataset = "text";
  spec.world_size = 3;  // 2 workers of 4 streams: 8 columns of 125 rows
  spec.batch_size = 4;
  spec.bptt = 35;  // ceil(124 / 35)
  EXPECT_EQ(*StepsPerEpoch(spec, "", &corpus), 4);
}

TEST(RunLengthTest, RankZeroCountsTheVersionsOfAnAnnealedRun) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 1000, 10);
  std::ostringstream sink;
  report::EventLogOptions lo;
  lo.err = lo.out = &sink;
  report::EventLog log(lo);
  JobSpec spec;
  spec.world_size = 3;  // floor(1000 / 64) = 15 steps a worker
  spec.epochs = 2;
  CountRunVersions(&spec, dir.path(), nullptr, &log);
  EXPECT_EQ(spec.total_steps, 30);
  EXPECT_NE(sink.str().find("lr schedule: cosine over 30 versions, from "
                            "--lr 0.03 to 0"),
            std::string::npos)
      << sink.str();

  JobSpec async;
  async.world_size = 3;
  async.mode = Mode::kAsync;  // a version per push
  CountRunVersions(&async, dir.path(), nullptr, &log);
  EXPECT_EQ(async.total_steps, 30);

  JobSpec constant;
  constant.lr_schedule = "constant";
  CountRunVersions(&constant, dir.path(), nullptr, &log);
  EXPECT_EQ(constant.total_steps, 0);

  // No training split at rank 0: auto falls back to constant, and says so.
  ScratchDir empty;
  JobSpec unknown;
  CountRunVersions(&unknown, empty.path(), nullptr, &log);
  EXPECT_EQ(unknown.total_steps, 0);
  EXPECT_NE(sink.str().find("--lr_schedule auto: rank 0 cannot count the "
                            "run's steps"),
            std::string::npos)
      << sink.str();
  EXPECT_NE(sink.str().find("lr schedule: constant --lr 0.03 (the run's "
                            "length is not known)"),
            std::string::npos)
      << sink.str();
}

}  // namespace
}  // namespace pstrain::ps
