#include "data/tensor_file.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include "testing/idx_files.h"

namespace pstrain::data {
namespace {

using testing::ScratchDir;

constexpr char kSave[] = "torch.save({\"x\": X, \"y\": Y}, ...)";
constexpr char kExpectedY[] =
    "expected int64 [N] (class labels) or a floating tensor [N, ...] "
    "(regression targets)";

using Entries = std::vector<std::pair<std::string, c10::IValue>>;

// {"x": ..., "y": ...} as torch.save writes a dict: str keys, any values.
c10::IValue Dict(const Entries& entries) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  for (const auto& [key, value] : entries)
    dict.insert(key, value);
  return dict;
}

void Save(const std::string& path, const c10::IValue& value) {
  const std::vector<char> bytes = torch::pickle_save(value);
  testing::WritePlain(path, std::string(bytes.begin(), bytes.end()));
}

SourceOptions Options(const std::string& dir) {
  SourceOptions o;
  o.dataset = "tensors";
  o.data_dir = dir;
  return o;
}

TEST(TensorFileTest, Float64XIsHeldAsFloat32AndGetReturnsItsRows) {
  ScratchDir dir;
  const torch::Tensor x =
      torch::arange(30, torch::kFloat64).view({6, 5}) / 3 - 4;
  const torch::Tensor y = torch::tensor({0, 2, 1, 0, 3, 2}, torch::kInt64);
  Save(dir.File("train.pt"), Dict({{"x", x}, {"y", y}}));
  auto file = TensorFile::Open(Options(dir.path()), Split::kTrain);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->size(), 6);
  const SourceShape shape = (*file)->shape();
  EXPECT_EQ(shape.channels, 5);
  EXPECT_EQ(shape.height, 1);
  EXPECT_EQ(shape.width, 1);
  EXPECT_EQ(shape.num_classes, 4);
  EXPECT_EQ((*file)->x_shape(), std::vector<int64_t>{5});
  EXPECT_EQ((*file)->y_shape(), std::vector<int64_t>{});
  EXPECT_FALSE((*file)->y_is_float());
  const torch::Tensor idx = torch::tensor({4, 0, 4}, torch::kInt64);
  const Batch batch = (*file)->Get(idx, 7);
  ASSERT_EQ(batch.images.scalar_type(), torch::kFloat32);
  ASSERT_EQ(batch.images.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_TRUE(batch.images.is_contiguous());
  EXPECT_TRUE(
      torch::equal(batch.images, x.index_select(0, idx).to(torch::kFloat32)));
  for (int64_t j = 0; j < 5; ++j) {
    EXPECT_EQ(batch.images[0][j].item<float>(),
              static_cast<float>(x[4][j].item<double>()));
  }
  EXPECT_TRUE(torch::equal(batch.labels, torch::tensor({3, 0, 3})));
  EXPECT_EQ(batch.skipped, 0);
}

TEST(TensorFileTest, OpenSourceReadsTestPtForTheTestSplit) {
  ScratchDir dir;
  Save(dir.File("train.pt"), Dict({{"x", torch::zeros({5, 2})},
                                   {"y", torch::zeros({5}, torch::kInt64)}}));
  Save(dir.File("test.pt"), Dict({{"x", torch::ones({3, 2})},
                                  {"y", torch::ones({3}, torch::kInt64)}}));
  auto source = OpenSource(Options(dir.path() + "/"), Split::kTest);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ((*source)->size(), 3);
  EXPECT_EQ((*source)->shape().num_classes, 2);
  EXPECT_TRUE(torch::equal((*source)->Get(torch::arange(3), 0).images,
                           torch::ones({3, 2})));
}

TEST(TensorFileTest, FourDimXGivesChannelsHeightWidth) {
  ScratchDir dir;
  const torch::Tensor x =
      (torch::arange(120, torch::kFloat32).view({3, 2, 4, 5}) / 8)
          .to(torch::kFloat16);
  Save(dir.File("train.pt"),
       Dict({{"x", x}, {"y", torch::tensor({1, 0, 1}, torch::kInt64)}}));
  auto file = TensorFile::Open(Options(dir.path()), Split::kTrain);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const SourceShape shape = (*file)->shape();
  EXPECT_EQ(shape.channels, 2);
  EXPECT_EQ(shape.height, 4);
  EXPECT_EQ(shape.width, 5);
  EXPECT_EQ(shape.num_classes, 2);
  EXPECT_EQ((*file)->x_shape(), (std::vector<int64_t>{2, 4, 5}));
  const Batch batch = (*file)->Get(torch::tensor({2}, torch::kInt64), 0);
  EXPECT_TRUE(torch::equal(batch.images, x.narrow(0, 2, 1).to(torch::kFloat)));
}

TEST(TensorFileTest, OneDimXIsOneFeaturePerSample) {
  ScratchDir dir;
  const torch::Tensor x =
      torch::tensor({0.5, -2.0, 3.25, 8.0}).to(torch::kBFloat16);
  Save(dir.File("train.pt"),
       Dict({{"x", x}, {"y", torch::tensor({0, 0, 0, 0}, torch::kInt64)}}));
  auto file = TensorFile::Open(Options(dir.path()), Split::kTrain);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->shape().channels, 1);
  EXPECT_EQ((*file)->shape().num_classes, 1);
  EXPECT_EQ((*file)->x_shape(), std::vector<int64_t>{});
  const Batch batch = (*file)->Get(torch::tensor({3, 1}, torch::kInt64), 0);
  EXPECT_TRUE(torch::equal(batch.images, torch::tensor({8.0f, -2.0f})));
}

TEST(TensorFileTest, FloatYIsRegressionAndOtherKeysAreIgnored) {
  ScratchDir dir;
  const torch::Tensor y =
      torch::arange(10, torch::kFloat64).view({5, 2}) / 10 + 0.01;
  Save(dir.File("train.pt"), Dict({{"note", std::string("mine")},
                                   {"y", y},
                                   {"x", torch::ones({5, 3})},
                                   {"w", torch::ones({2})}}));
  auto file = TensorFile::Open(Options(dir.path()), Split::kTrain);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE((*file)->y_is_float());
  EXPECT_EQ((*file)->y_shape(), std::vector<int64_t>{2});
  EXPECT_EQ((*file)->shape().channels, 3);
  EXPECT_EQ((*file)->shape().num_classes, 0);
  const Batch batch = (*file)->Get(torch::tensor({1, 4}, torch::kInt64), 0);
  ASSERT_EQ(batch.labels.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(
      torch::equal(batch.labels,
                   y.index_select(0, torch::tensor({1, 4})).to(torch::kFloat)));
}

TEST(TensorFileTest, EmptySplitHasNoClasses) {
  ScratchDir dir;
  Save(dir.File("test.pt"), Dict({{"x", torch::zeros({0, 3})},
                                  {"y", torch::zeros({0}, torch::kInt64)}}));
  auto file = TensorFile::Open(Options(dir.path()), Split::kTest);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->size(), 0);
  EXPECT_EQ((*file)->shape().num_classes, 0);
  EXPECT_EQ((*file)->Get(torch::zeros({0}, torch::kInt64), 0).images.sizes(),
            (std::vector<int64_t>{0, 3}));
}

TEST(TensorFileTest, ViewsAndTensorsThatRequireGradAreHeldPlain) {
  ScratchDir dir;
  const torch::Tensor base = torch::arange(24, torch::kFloat32).view({6, 4});
  const torch::Tensor x = base.t();  // [4, 6], not contiguous
  const torch::Tensor y = torch::rand({12}).requires_grad_().narrow(0, 8, 4);
  Save(dir.File("train.pt"), Dict({{"x", x}, {"y", y}}));
  auto file = TensorFile::Open(Options(dir.path()), Split::kTrain);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const Batch batch = (*file)->Get(torch::arange(4), 0);
  EXPECT_TRUE(torch::equal(batch.images, x));
  EXPECT_TRUE(torch::equal(batch.labels, y.detach()));
  EXPECT_FALSE(batch.labels.requires_grad());
}

TEST(TensorFileTest, NoDataDirIsInvalidArgument) {
  auto file = TensorFile::Open(Options(""), Split::kTrain);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(file.status().message(),
            "--dataset tensors needs --data_dir DIR holding train.pt and "
            "test.pt (torch.save({\"x\": X, \"y\": Y}, ...))");
}

TEST(TensorFileTest, MissingFileIsNotFound) {
  ScratchDir dir;
  auto file = TensorFile::Open(Options(dir.path()), Split::kTest);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(
      file.status().message(),
      dir.File("test.pt") + " not found; write it in Python with " + kSave);
}

TEST(TensorFileTest, BytesTorchSaveDidNotWriteAreCorruption) {
  ScratchDir dir;
  testing::WritePlain(dir.File("train.pt"), "x,y\n1.0,2\n");
  auto file = TensorFile::Open(Options(dir.path()), Split::kTrain);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(file.status().message(),
            dir.File("train.pt") +
                ": not a torch.save file: PytorchStreamReader failed reading "
                "zip archive: not a ZIP archive");
}

TEST(TensorFileTest, BytesInLibtorchsReasonAreEscaped) {
  ScratchDir dir;
  const std::vector<char> saved = torch::pickle_save(Dict({{"x", 1}}));
  std::string bytes(saved.begin(), saved.end());
  const size_t pickle = bytes.find("\x80\x02", bytes.find("data.pkl"));
  ASSERT_NE(pickle, std::string::npos);
  bytes[pickle + 1] = '\x04';  // pickle protocol 4, which libtorch refuses
  testing::WritePlain(dir.File("train.pt"), bytes);
  auto file = TensorFile::Open(Options(dir.path()), Split::kTrain);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(file.status().message(),
            dir.File("train.pt") +
                ": not a torch.save file: Only Pickle protocol 2 is "
                "supported, found protocol = \\x04");
}

struct BadFile {
  c10::IValue saved;
  std::string message;  // after "DIR/train.pt: "
};

std::vector<BadFile> BadFiles() {
  const torch::Tensor x = torch::zeros({100, 5});
  const torch::Tensor y = torch::zeros({100}, torch::kInt64);
  const std::string x_wants = "; expected a floating tensor [N, ...]";
  const std::string y_wants = std::string("; ") + kExpectedY;
  return {
      {torch::zeros({2}), "holds a tensor float32 [2], not a dict; expected " +
                              std::string(kSave)},
      {c10::List<int64_t>({1, 2}),
       "holds a list of 2, not a dict; expected " + std::string(kSave)},
      {Dict({{"y", y}, {"w", 1}}),
       "no key \"x\" in the dict (keys: \"y\", \"w\"); expected " +
           std::string(kSave)},
      {Dict({{"x", x}}), "no key \"y\" in the dict (keys: \"x\"); expected " +
                             std::string(kSave)},
      {Dict({{"x", c10::List<double>({1.0, 2.0})}, {"y", y}}),
       "x is a list of 2" + x_wants},
      {Dict({{"x", torch::zeros({100, 5}, torch::kInt64)}, {"y", y}}),
       "x is int64 [100, 5]" + x_wants},
      {Dict({{"x", torch::tensor(1.5f)}, {"y", y}}),
       "x is float32 []" + x_wants},
      {Dict({{"x", x}, {"y", torch::zeros({100}, torch::kInt32)}}),
       "y is int32 [100]" + y_wants},
      {Dict({{"x", x}, {"y", torch::tensor(int64_t{3})}}),
       "y is int64 []" + y_wants},
      {Dict({{"x", x}, {"y", torch::tensor(3.0f)}}),
       "y is float32 []" + y_wants},
      {Dict({{"x", x}, {"y", torch::zeros({100, 2}, torch::kInt64)}}),
       "y is int64 [100, 2]" + y_wants},
      {Dict({{"x", x}, {"y", std::string("labels")}}), "y is a str" + y_wants},
      {Dict({{"x", x}, {"y", torch::zeros({90}, torch::kInt64)}}),
       "x has 100 samples ([100, 5]) and y 90 ([90]); expected the same N"},
      {Dict({{"x", torch::zeros({4, 1})},
             {"y", torch::tensor({0, 1, -3, 2}, torch::kInt64)}}),
       "y[2] is -3; expected class labels >= 0"},
  };
}

TEST(TensorFileTest, EachBadContentIsOneLineOfCorruption) {
  for (const BadFile& bad : BadFiles()) {
    ScratchDir dir;
    Save(dir.File("train.pt"), bad.saved);
    auto file = TensorFile::Open(Options(dir.path()), Split::kTrain);
    ASSERT_FALSE(file.ok()) << bad.message;
    EXPECT_EQ(file.status().code(), StatusCode::kCorruption) << bad.message;
    EXPECT_EQ(file.status().message(),
              dir.File("train.pt") + ": " + bad.message);
  }
}

}  // namespace
}  // namespace pstrain::data
