#include "data/cifar10.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/transforms.h"
#include "testing/idx_files.h"
#include "testing/image_files.h"

namespace pstrain::data {
namespace {

using testing::ScratchDir;

// `n` records: label (first + r) % 10, pixel p = (r * 31 + p) % 256.
std::string Records(int n, int first) {
  std::string out;
  for (int r = 0; r < n; ++r) {
    out.push_back(static_cast<char>((first + r) % 10));
    for (int p = 0; p < 3072; ++p)
      out.push_back(static_cast<char>((r * 31 + p) % 256));
  }
  return out;
}

void WriteTinyCifar(const std::string& dir) {
  std::filesystem::create_directories(dir);
  for (int i = 1; i <= 5; ++i) {
    testing::WriteFile(dir + "/data_batch_" + std::to_string(i) + ".bin",
                       Records(2, 2 * i));
  }
  testing::WriteFile(dir + "/test_batch.bin", Records(3, 0));
}

SourceOptions Options(const std::string& dir) {
  SourceOptions o;
  o.dataset = "cifar10";
  o.data_dir = dir;
  return o;
}

TEST(Cifar10Test, TestSplitIsTheNormalizedPixels) {
  ScratchDir dir;
  WriteTinyCifar(dir.path());
  auto cifar = Cifar10::Open(Options(dir.path()), Split::kTest);
  ASSERT_TRUE(cifar.ok()) << cifar.status().ToString();
  EXPECT_EQ((*cifar)->size(), 3);
  EXPECT_EQ((*cifar)->shape().channels, 3);
  EXPECT_EQ((*cifar)->shape().height, 32);
  const Batch batch = (*cifar)->Get(torch::tensor({2, 0}), 4);
  ASSERT_EQ(batch.images.sizes(), (std::vector<int64_t>{2, 3, 32, 32}));
  EXPECT_TRUE(torch::equal(batch.labels, torch::tensor({2, 0})));
  const Normalization& n = kCifar10Normalization;
  for (int p : {0, 1, 1024, 3071}) {
    const int c = p / 1024, y = (p % 1024) / 32, x = p % 32;
    const float want =
        (static_cast<float>((2 * 31 + p) % 256) / 255.0f - n.mean[c]) /
        n.std[c];
    EXPECT_EQ(batch.images[0][c][y][x].item<float>(), want) << p;
  }
}

TEST(Cifar10Test, TrainSplitCropsAndFlipsPerSampleAndEpoch) {
  ScratchDir dir;
  WriteTinyCifar(dir.path() + "/cifar-10-batches-bin");  // as unpacked
  auto cifar = Cifar10::Open(Options(dir.path()), Split::kTrain);
  ASSERT_TRUE(cifar.ok()) << cifar.status().ToString();
  ASSERT_EQ((*cifar)->size(), 10);
  const Batch a = (*cifar)->Get(torch::arange(10), 0);
  EXPECT_TRUE(torch::equal(a.labels, torch::arange(2, 12) % 10));
  const Batch one = (*cifar)->Get(torch::tensor({7}), 0);
  EXPECT_TRUE(torch::equal(one.images[0], a.images[7]));
  const Batch b = (*cifar)->Get(torch::arange(10), 1);
  EXPECT_FALSE(torch::equal(a.images, b.images));
}

TEST(Cifar10Test, Errors) {
  ScratchDir dir;
  auto no_dir = Cifar10::Open(Options(""), Split::kTrain);
  EXPECT_EQ(no_dir.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(no_dir.status().message(),
            "cifar10 needs --data_dir (the CIFAR-10 binary version)");
  auto missing = Cifar10::Open(Options(dir.path()), Split::kTest);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir.File("test_batch.bin")),
            std::string::npos);
  testing::WriteFile(dir.File("test_batch.bin"), Records(1, 0) + "x");
  auto ragged = Cifar10::Open(Options(dir.path()), Split::kTest);
  EXPECT_EQ(ragged.status().code(), StatusCode::kCorruption);
  std::string bad = Records(2, 0);
  bad[3073] = 10;
  testing::WriteFile(dir.File("test_batch.bin"), bad);
  auto label = Cifar10::Open(Options(dir.path()), Split::kTest);
  EXPECT_EQ(label.status().code(), StatusCode::kCorruption);
  EXPECT_NE(label.status().message().find("label 10"), std::string::npos);
}

}  // namespace
}  // namespace pstrain::data
