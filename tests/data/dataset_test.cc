#include "data/dataset.h"

#include <cmath>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "testing/idx_files.h"

namespace pstrain::data {
namespace {

using testing::IdxBytes;
using testing::ImagesBytes;
using testing::LabelsBytes;
using testing::ScratchDir;
using testing::WriteGz;
using testing::WritePlain;

constexpr char kTrainImages[] = "train-images-idx3-ubyte";
constexpr char kTrainLabels[] = "train-labels-idx1-ubyte";

void ExpectError(const Result<Dataset>& result, StatusCode code,
                 const std::string& message) {
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), code) << result.status().ToString();
  EXPECT_EQ(result.status().message(), message);
}

TEST(DatasetTest, NamesDirsAndPackages) {
  EXPECT_EQ(DatasetNames(),
            (std::vector<std::string>{"fashion-mnist", "mnist"}));
  EXPECT_EQ(DefaultDataDir("fashion-mnist"),
            "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(DefaultDataDir("mnist"), "/usr/share/datasets/mnist");
  EXPECT_EQ(DefaultDataDir("cifar"), "");
  EXPECT_EQ(DatasetPackage("fashion-mnist"), "dataset-fashion-mnist");
  EXPECT_EQ(DatasetPackage("mnist"), "");
}

TEST(DatasetTest, LoadsPlainTrainFilesNormalized) {
  ScratchDir dir;
  WritePlain(dir.File(kTrainImages), ImagesBytes(5));
  WritePlain(dir.File(kTrainLabels), LabelsBytes(5));
  Result<Dataset> ds = LoadDataset("fashion-mnist", dir.path(), Split::kTrain);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->size(), 5);
  EXPECT_EQ(ds->images.scalar_type(), torch::kFloat32);
  EXPECT_EQ(ds->images.sizes(), torch::IntArrayRef({5, 1, 28, 28}));
  EXPECT_EQ(ds->labels.scalar_type(), torch::kInt64);
  EXPECT_EQ(ds->labels[4].item<int64_t>(), 4);
  EXPECT_FLOAT_EQ(ds->images[0][0][0][1].item<float>(),
                  (7 / 255.0 - 0.2860) / 0.3530);
}

TEST(DatasetTest, LoadsGzTestFilesWithMnistStatistics) {
  ScratchDir dir;
  WriteGz(dir.File("t10k-images-idx3-ubyte.gz"), ImagesBytes(3));
  WriteGz(dir.File("t10k-labels-idx1-ubyte.gz"), LabelsBytes(3));
  Result<Dataset> ds = LoadDataset("mnist", dir.path() + "/", Split::kTest);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->size(), 3);
  EXPECT_FLOAT_EQ(ds->images[0][0][0][2].item<float>(),
                  (14 / 255.0 - 0.1307) / 0.3081);
}

TEST(DatasetTest, PlainFileWinsOverGz) {
  ScratchDir dir;
  WritePlain(dir.File(kTrainImages), ImagesBytes(2));
  WritePlain(dir.File(std::string(kTrainImages) + ".gz"), "garbage");
  WriteGz(dir.File(std::string(kTrainLabels) + ".gz"), LabelsBytes(2));
  Result<Dataset> ds = LoadDataset("mnist", dir.path(), Split::kTrain);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->size(), 2);
}

TEST(DatasetTest, MissingDirectoryIsNotFoundWithInstallHint) {
  ScratchDir dir;
  const std::string missing = dir.File("nowhere");
  ExpectError(LoadDataset("fashion-mnist", missing, Split::kTrain),
              StatusCode::kNotFound,
              missing +
                  "/train-images-idx3-ubyte[.gz] not found; install "
                  "Debian's package dataset-fashion-mnist or pass "
                  "--data_dir");
  ExpectError(LoadDataset("mnist", missing, Split::kTest),
              StatusCode::kNotFound,
              missing +
                  "/t10k-images-idx3-ubyte[.gz] not found; pass "
                  "--data_dir");
}

TEST(DatasetTest, MissingLabelsFileIsNamed) {
  ScratchDir dir;
  WritePlain(dir.File(kTrainImages), ImagesBytes(2));
  ExpectError(LoadDataset("mnist", dir.path(), Split::kTrain),
              StatusCode::kNotFound,
              dir.File(kTrainLabels) + "[.gz] not found; pass --data_dir");
}

TEST(DatasetTest, CountMismatchIsCorruption) {
  ScratchDir dir;
  WritePlain(dir.File(kTrainImages), ImagesBytes(5));
  WriteGz(dir.File(std::string(kTrainLabels) + ".gz"), LabelsBytes(4));
  ExpectError(LoadDataset("mnist", dir.path(), Split::kTrain),
              StatusCode::kCorruption,
              dir.File(kTrainLabels) + ".gz: 4 labels, but " +
                  dir.File(kTrainImages) + " holds 5 images");
}

TEST(DatasetTest, WrongImageSizeIsCorruption) {
  ScratchDir dir;
  WritePlain(dir.File(kTrainImages), ImagesBytes(2, 32, 30));
  WritePlain(dir.File(kTrainLabels), LabelsBytes(2));
  ExpectError(LoadDataset("mnist", dir.path(), Split::kTrain),
              StatusCode::kCorruption,
              dir.File(kTrainImages) + ": images are 32x30, expected 28x28");
}

TEST(DatasetTest, LabelOutOfRangeIsCorruption) {
  ScratchDir dir;
  WritePlain(dir.File(kTrainImages), ImagesBytes(2));
  WritePlain(dir.File(kTrainLabels), IdxBytes(0x00000801, {2}, "\x03\x0c"));
  ExpectError(LoadDataset("mnist", dir.path(), Split::kTrain),
              StatusCode::kCorruption,
              dir.File(kTrainLabels) + ": label 12 is outside 0..9");
}

TEST(DatasetTest, CorruptFileErrorPassesThrough) {
  ScratchDir dir;
  WritePlain(dir.File(kTrainImages), LabelsBytes(2));
  ExpectError(LoadDataset("mnist", dir.path(), Split::kTrain),
              StatusCode::kCorruption,
              dir.File(kTrainImages) +
                  ": magic number is 0x00000801, expected 0x00000803 "
                  "(IDX images)");
}

TEST(DatasetTest, UnknownNameIsInvalidArgument) {
  ExpectError(
      LoadDataset("cifar", "/nonexistent", Split::kTrain),
      StatusCode::kInvalidArgument,
      "unknown data set 'cifar'; expected one of: fashion-mnist, mnist");
}

TEST(DatasetTest, GetBatchPicksRowsInIndexOrder) {
  ScratchDir dir;
  WritePlain(dir.File(kTrainImages), ImagesBytes(6));
  WritePlain(dir.File(kTrainLabels), LabelsBytes(6));
  Result<Dataset> ds = LoadDataset("mnist", dir.path(), Split::kTrain);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  Batch batch = GetBatch(*ds, torch::tensor({4, 1, 4}, torch::kInt64));
  EXPECT_EQ(batch.images.sizes(), torch::IntArrayRef({3, 1, 28, 28}));
  EXPECT_TRUE(batch.images[0].equal(ds->images[4]));
  EXPECT_TRUE(batch.images[1].equal(ds->images[1]));
  EXPECT_TRUE(batch.labels.equal(torch::tensor({4, 1, 4}, torch::kInt64)));
}

TEST(DatasetTest, RealFashionMnist) {
  const std::string dir = DefaultDataDir("fashion-mnist");
  if (!std::filesystem::is_directory(dir)) {
    GTEST_SKIP() << dir << " is absent; install Debian's package "
                 << "dataset-fashion-mnist to run this test";
  }
  Result<Dataset> train = LoadDataset("fashion-mnist", dir, Split::kTrain);
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  Result<Dataset> test = LoadDataset("fashion-mnist", dir, Split::kTest);
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(train->labels.min().item<int64_t>(), 0);
  EXPECT_EQ(train->labels.max().item<int64_t>(), 9);
  EXPECT_EQ(test->labels.max().item<int64_t>(), 9);
  EXPECT_LT(std::abs(train->images.mean().item<double>()), 0.01);
  EXPECT_NEAR(train->images.std().item<double>(), 1.0, 0.02);
}

}  // namespace
}  // namespace pstrain::data

namespace pstrain::data {
namespace {

TEST(DatasetTest, EmptyDataDirMeansDebiansDirectory) {
  if (!std::filesystem::exists(DefaultDataDir("fashion-mnist"))) {
    GTEST_SKIP() << "Debian's dataset-fashion-mnist is not installed";
  }
  auto test = LoadDataset("fashion-mnist", "", Split::kTest);
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  EXPECT_EQ(test->size(), 10000);
}

}  // namespace
}  // namespace pstrain::data
