#include "ps/job/job_module.h"

#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model_state.h"
#include "ps/job/job_data.h"
#include "testing/idx_files.h"
#include "testing/script_modules.h"
#include "util/sha256.h"

namespace pstrain::ps {
namespace {

using data::testing::ScratchDir;
using pstrain::testing::ScriptLinearBytes;

// A labelled set held in memory, as --dataset tensors gives one.
class TensorSource : public data::Source {
 public:
  TensorSource(torch::Tensor x, torch::Tensor y)
      : x_(std::move(x)), y_(std::move(y)) {}
  int64_t size() const override { return x_.size(0); }
  data::SourceShape shape() const override { return {1, 1, 1, 0}; }
  data::Batch Get(const torch::Tensor& indices, int64_t) const override {
    return {x_.index_select(0, indices), y_.index_select(0, indices), 0};
  }

 private:
  torch::Tensor x_, y_;
};

std::string Write(const ScratchDir& dir, const std::string& name,
                  const std::string& bytes) {
  std::ofstream(dir.File(name), std::ios::binary) << bytes;
  return dir.File(name);
}

// Rank 0's job for the module in `path`, read.
JobSpec ScriptJob(const std::string& path) {
  JobSpec spec;
  spec.model = path;
  EXPECT_TRUE(ReadModuleFile(&spec).ok());
  return spec;
}

TEST(JobModuleTest, RankZeroReadsTheFileAndItsHash) {
  ScratchDir dir;
  const std::string bytes = ScriptLinearBytes(3, 2);
  const JobSpec spec = ScriptJob(Write(dir, "lin.pt", bytes));
  EXPECT_TRUE(IsScriptJob(spec));
  ASSERT_TRUE(spec.module);
  EXPECT_EQ(*spec.module, bytes);
  EXPECT_EQ(spec.model_sha256, Sha256Hex(bytes));
  EXPECT_TRUE(ValidateJobSpec(spec).ok());

  auto model = MakeJobModel(spec);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::vector<std::string> names;
  for (const auto& s : models::ModelState(**model))
    names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc.weight", "fc.bias"}));
}

TEST(JobModuleTest, ABuiltInModelHasNoModule) {
  JobSpec spec;
  ASSERT_TRUE(ReadModuleFile(&spec).ok());
  EXPECT_FALSE(IsScriptJob(spec));
  EXPECT_FALSE(spec.module);
  EXPECT_EQ(spec.model_sha256, "");
  spec.loss = "cross_entropy";
  EXPECT_EQ(LossOf(spec), models::Loss::kNll);  // log_softmax's output
}

TEST(JobModuleTest, APathThatIsNoFileIsNamed) {
  JobSpec spec;
  spec.model = "/nonexistent/mlp.pt";
  Status s = ReadModuleFile(&spec);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "--model '/nonexistent/mlp.pt': neither a built-in model (net, "
            "convnet, mlp, resnet18, resnet34, resnet50, lstm_lm) nor a file");
}

TEST(JobModuleTest, AScriptJobWithoutItsBytesBuildsNoModel) {
  JobSpec spec;
  spec.model = "lin.pt";
  auto model = MakeJobModel(spec);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().message(),
            "--model lin.pt: the module's bytes are not loaded");
}

TEST(JobModuleTest, AWorkersOwnCopyMustHaveRankZerosHash) {
  ScratchDir dir;
  JobSpec job = ScriptJob(Write(dir, "lin.pt", ScriptLinearBytes(3, 2)));
  JobSpec same = job;
  same.module.reset();
  ASSERT_TRUE(
      UseOwnModuleFile(Write(dir, "copy.pt", ScriptLinearBytes(3, 2)), &same)
          .ok());
  ASSERT_TRUE(same.module);
  EXPECT_EQ(*same.module, *job.module);

  const std::string other = ScriptLinearBytes(3, 2, /*seed=*/2);
  JobSpec differs = job;
  Status s = UseOwnModuleFile(Write(dir, "other.pt", other), &differs);
  EXPECT_EQ(s.code(), StatusCode::kIncompatible);
  EXPECT_EQ(s.message(), "--model " + dir.File("other.pt") + " has SHA-256 " +
                             Sha256Hex(other) + ", rank 0's module " +
                             dir.File("lin.pt") + " has " + job.model_sha256 +
                             ": a different file (leave --model out to take "
                             "rank 0's)");
  EXPECT_EQ(UseOwnModuleFile("net", &differs).message(),
            "--model net: rank 0's job trains the module " +
                dir.File("lin.pt") + " (SHA-256 " + job.model_sha256 + ")");

  JobSpec built_in;
  EXPECT_TRUE(UseOwnModuleFile("net", &built_in).ok());
  EXPECT_EQ(UseOwnModuleFile("mlp", &built_in).message(),
            "--model mlp: rank 0's job trains net");
}

TEST(JobModuleTest, TheModuleIsTriedOnTwoSamplesOfTheData) {
  ScratchDir dir;
  const JobSpec spec = ScriptJob(Write(dir, "lin.pt", ScriptLinearBytes(3, 2)));
  auto model = MakeJobModel(spec);
  ASSERT_TRUE(model.ok());
  const auto labels = torch::tensor({0, 1, 1}, torch::kInt64);
  EXPECT_TRUE(CheckModelOnData(spec, **model,
                               TensorSource(torch::randn({3, 3}), labels),
                               "d/test.pt")
                  .ok());
  EXPECT_TRUE((*model)->is_training());

  Status wide = CheckModelOnData(
      spec, **model, TensorSource(torch::randn({3, 7}), labels), "d/test.pt");
  EXPECT_EQ(wide.code(), StatusCode::kInvalidArgument);
  const std::string prefix = "--model " + dir.File("lin.pt") +
                             ": forward on d/test.pt's x [2, 7] "
                             "failed: ";
  EXPECT_EQ(wide.message().rfind(prefix, 0), 0u) << wide.message();
  // The interpreter's last line, which says what failed.
  EXPECT_NE(wide.message().find("mat1 and mat2 shapes cannot be multiplied"),
            std::string::npos)
      << wide.message();
  EXPECT_EQ(wide.message().find('\n'), std::string::npos);

  Status regression = CheckModelOnData(
      spec, **model, TensorSource(torch::randn({3, 3}), torch::randn({3, 2})),
      "d/test.pt");
  EXPECT_EQ(regression.message(),
            "d/test.pt: --loss cross_entropy needs int64 class indices y [B] "
            "(a float y is a regression target: --loss mse); y is float32 "
            "[2, 2]");
  JobSpec mse = spec;
  mse.loss = "mse";
  EXPECT_TRUE(
      CheckModelOnData(mse, **model,
                       TensorSource(torch::randn({3, 3}), torch::randn({3, 2})),
                       "d/test.pt")
          .ok());
}

TEST(JobModuleTest, DataIsNamedByItsFile) {
  JobSpec spec;
  spec.dataset = "tensors";
  EXPECT_EQ(DataName(spec, "d", data::Split::kTrain), "d/train.pt");
  EXPECT_EQ(DataName(spec, "d/", data::Split::kTest), "d/test.pt");
  spec.dataset = "fashion-mnist";
  EXPECT_EQ(DataName(spec, "", data::Split::kTest),
            "the test set of fashion-mnist");
}

}  // namespace
}  // namespace pstrain::ps
