#include "data/source.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "testing/idx_files.h"
#include "testing/image_files.h"

namespace pstrain::data {
namespace {

using testing::ScratchDir;

TEST(SourceTest, NamesDefaultFirst) {
  EXPECT_EQ(SourceNames(),
            (std::vector<std::string>{"fashion-mnist", "mnist", "cifar10",
                                      "imagefolder", "tensors"}));
}

TEST(SourceTest, UnknownNameIsInvalidArgument) {
  SourceOptions o;
  o.dataset = "imagenet";
  auto source = OpenSource(o, Split::kTrain);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(source.status().message().find("imagefolder"), std::string::npos);
}

TEST(SourceTest, IdxSetsAreTheInMemoryDataset) {
  ScratchDir dir;
  testing::WriteTinyDataset(dir.path(), 20, 10);
  SourceOptions o;
  o.dataset = "mnist";
  o.data_dir = dir.path();
  auto source = OpenSource(o, Split::kTrain);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ((*source)->size(), 20);
  EXPECT_EQ((*source)->shape().channels, 1);
  EXPECT_EQ((*source)->shape().height, 28);
  auto dataset = LoadDataset("mnist", dir.path(), Split::kTrain);
  ASSERT_TRUE(dataset.ok());
  const auto idx = torch::tensor({3, 17, 0});
  const Batch got = (*source)->Get(idx, 5);
  const Batch want = GetBatch(*dataset, idx);
  EXPECT_TRUE(torch::equal(got.images, want.images));
  EXPECT_TRUE(torch::equal(got.labels, want.labels));
  EXPECT_EQ(got.skipped, 0);
}

TEST(SourceTest, OpensImageFoldersAndCifar) {
  ScratchDir dir;
  testing::WriteImageFolder(dir.path(), {"x", "y"}, 2, 20, false);
  SourceOptions o;
  o.dataset = "imagefolder";
  o.data_dir = dir.path();
  o.image_size = 16;
  auto source = OpenSource(o, Split::kTest);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ((*source)->size(), 4);
  EXPECT_EQ((*source)->shape().num_classes, 2);
  o.data_dir = "";
  EXPECT_EQ(OpenSource(o, Split::kTest).status().code(),
            StatusCode::kInvalidArgument);
  o.dataset = "cifar10";
  EXPECT_EQ(OpenSource(o, Split::kTest).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pstrain::data
