#include "data/image_folder.h"

#include <atomic>
#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "testing/idx_files.h"
#include "testing/image_files.h"

namespace pstrain::data {
namespace {

using testing::ScratchDir;
using testing::WriteImageFolder;

SourceOptions Options(const std::string& dir, int64_t image_size = 24) {
  SourceOptions o;
  o.dataset = "imagefolder";
  o.data_dir = dir;
  o.image_size = image_size;
  o.seed = 5;
  return o;
}

torch::Tensor Range(int64_t n) {
  return torch::arange(n, torch::kInt64);
}

TEST(ImageFolderTest, ListsSortedClassesAndFiles) {
  ScratchDir dir;
  WriteImageFolder(dir.path(), {"zebra", "ant", "mole"}, 3, 30, false);
  auto folder = ImageFolder::Open(Options(dir.path()), Split::kTrain);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  const auto& f = **folder;
  EXPECT_EQ(f.classes(), (std::vector<std::string>{"ant", "mole", "zebra"}));
  ASSERT_EQ(f.size(), 9);
  EXPECT_EQ(f.path(0), dir.path() + "/train/ant/img0.jpg");
  EXPECT_EQ(f.path(1), dir.path() + "/train/ant/img1.png");
  EXPECT_EQ(f.label(0), 0);
  EXPECT_EQ(f.label(8), 2);
  const SourceShape shape = f.shape();
  EXPECT_EQ(shape.channels, 3);
  EXPECT_EQ(shape.height, 24);
  EXPECT_EQ(shape.width, 24);
  EXPECT_EQ(shape.num_classes, 3);
}

TEST(ImageFolderTest, TrainBatchesDependOnlyOnSeedEpochAndIndex) {
  ScratchDir dir;
  WriteImageFolder(dir.path(), {"a", "b"}, 3, 40, false);
  auto folder = ImageFolder::Open(Options(dir.path()), Split::kTrain);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  const Batch all = (*folder)->Get(Range(6), 0);
  ASSERT_EQ(all.images.sizes(), (std::vector<int64_t>{6, 3, 24, 24}));
  EXPECT_EQ(all.images.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(all.labels, torch::tensor({0, 0, 0, 1, 1, 1})));
  EXPECT_EQ(all.skipped, 0);
  const Batch again = (*folder)->Get(torch::tensor({4, 1}), 0);
  EXPECT_TRUE(torch::equal(again.images[0], all.images[4]));
  EXPECT_TRUE(torch::equal(again.images[1], all.images[1]));
  const Batch next_epoch = (*folder)->Get(Range(6), 1);
  EXPECT_FALSE(torch::equal(next_epoch.images, all.images));
  // Normalized pixels of an image: roughly centred, no NaN.
  EXPECT_TRUE(torch::isfinite(all.images).all().item<bool>());
  EXPECT_LT(all.images.abs().max().item<float>(), 3.0f);
}

TEST(ImageFolderTest, TestBatchesAreTheSameEveryEpoch) {
  ScratchDir dir;
  WriteImageFolder(dir.path(), {"a", "b"}, 2, 40, false);
  auto folder = ImageFolder::Open(Options(dir.path(), 32), Split::kTest);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  EXPECT_EQ((*folder)->path(0), dir.path() + "/val/a/img0.jpg");
  const Batch a = (*folder)->Get(Range(4), 0);
  const Batch b = (*folder)->Get(Range(4), 3);
  ASSERT_EQ(a.images.sizes(), (std::vector<int64_t>{4, 3, 32, 32}));
  EXPECT_TRUE(torch::equal(a.images, b.images));
}

TEST(ImageFolderTest, CorruptFilesAreReportedOnceSkippedAndCounted) {
  ScratchDir dir;
  WriteImageFolder(dir.path(), {"a", "b"}, 2, 30, true);
  std::atomic<int> reports{0};
  std::string first;
  SourceOptions o = Options(dir.path());
  o.on_corrupt = [&](const Status& why) {
    if (reports++ == 0)
      first = why.message();
  };
  auto folder = ImageFolder::Open(o, Split::kTrain);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  ASSERT_EQ((*folder)->size(), 6);  // a: bad_text, bad_truncated, img0, img1
  EXPECT_EQ((*folder)->path(0), dir.path() + "/train/a/bad_text.jpg");
  for (int round = 0; round < 3; ++round) {
    const Batch batch = (*folder)->Get(Range(6), round);
    EXPECT_EQ(batch.skipped, 2);
    EXPECT_EQ(batch.images.size(0), 4);
    EXPECT_TRUE(torch::equal(batch.labels, torch::tensor({0, 0, 1, 1})));
  }
  EXPECT_EQ(reports.load(), 2);
  EXPECT_EQ(first.rfind(dir.path() + "/train/a/bad_text.jpg: ", 0), 0u)
      << first;
  const Batch only_bad = (*folder)->Get(torch::tensor({1}), 0);
  EXPECT_EQ(only_bad.skipped, 1);
  EXPECT_EQ(only_bad.images.size(0), 0);
}

void ExpectError(const SourceOptions& o, StatusCode code,
                 const std::vector<std::string>& named) {
  auto folder = ImageFolder::Open(o, Split::kTrain);
  ASSERT_FALSE(folder.ok());
  EXPECT_EQ(folder.status().code(), code) << folder.status().ToString();
  for (const std::string& text : named) {
    EXPECT_NE(folder.status().message().find(text), std::string::npos)
        << folder.status().message() << " does not name " << text;
  }
  EXPECT_EQ(folder.status().message().find('\n'), std::string::npos);
}

TEST(ImageFolderTest, OpenErrorsNameThePath) {
  ScratchDir dir;
  ExpectError(Options(""), StatusCode::kInvalidArgument, {"--data_dir"});
  ExpectError(Options(dir.File("absent")), StatusCode::kNotFound,
              {dir.File("absent")});
  ExpectError(Options(dir.path()), StatusCode::kNotFound, {dir.File("train")});
  std::filesystem::create_directories(dir.File("train"));
  std::filesystem::create_directories(dir.File("val"));
  testing::WriteFile(dir.File("train/loose.jpg"), "x");
  ExpectError(Options(dir.path()), StatusCode::kCorruption,
              {dir.File("train"), "no class folders"});
  ExpectError(Options(dir.path(), 0), StatusCode::kInvalidArgument,
              {"--image_size"});
}

TEST(ImageFolderTest, ClassesThatDifferBetweenTrainAndValAreCorruption) {
  ScratchDir dir;
  WriteImageFolder(dir.path(), {"a", "c"}, 1, 20, false);
  std::filesystem::create_directories(dir.File("val/b"));
  ExpectError(Options(dir.path()), StatusCode::kCorruption,
              {dir.File("train"), dir.File("val"), "'b'"});
  auto test = ImageFolder::Open(Options(dir.path()), Split::kTest);
  EXPECT_EQ(test.status().code(), StatusCode::kCorruption);
}

TEST(ImageFolderTest, AClassFolderWithoutImagesIsCorruption) {
  ScratchDir dir;
  WriteImageFolder(dir.path(), {"a"}, 1, 20, false);
  std::filesystem::create_directories(dir.File("train/b"));
  std::filesystem::create_directories(dir.File("val/b"));
  testing::WriteFile(dir.File("val/b/notes.txt"), "not an image");
  testing::WriteFile(dir.File("val/b/x.JPEG"), "");
  ExpectError(Options(dir.path()), StatusCode::kCorruption,
              {dir.File("train/b"), ".jpg"});
  // Upper-case extensions count: val/b/x.JPEG is listed (and skipped when
  // read, being empty).
  auto val = ImageFolder::Open(Options(dir.path()), Split::kTest);
  ASSERT_TRUE(val.ok()) << val.status().ToString();
  ASSERT_EQ((*val)->size(), 2);
  EXPECT_EQ((*val)->path(1), dir.File("val/b/x.JPEG"));
  SourceOptions quiet = Options(dir.path());
  quiet.on_corrupt = [](const Status&) {};
  auto val_quiet = ImageFolder::Open(quiet, Split::kTest);
  ASSERT_TRUE(val_quiet.ok());
  EXPECT_EQ((*val_quiet)->Get(Range(2), 0).skipped, 1);
}

}  // namespace
}  // namespace pstrain::data
