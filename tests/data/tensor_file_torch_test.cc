// A process test: Python's torch.save (Debian's python3-torch) writes
// train.pt and test.pt, and TensorFile reads back exactly those values.

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "data/tensor_file.h"
#include "testing/idx_files.h"
#include "testing/process.h"

namespace pstrain::data {
namespace {

// argv: the directory. Writes train.pt (float64 X [7, 3], int64 Y) and
// test.pt (X a strided float32 view [4, 3] that requires grad, float64
// Y [4, 2]); prints the values as JSON.
constexpr const char* kScript = R"(
import json, sys
import torch
g = torch.Generator().manual_seed(5)
x = torch.randn(7, 3, generator=g, dtype=torch.float64)
y = torch.tensor([2, 0, 1, 2, 2, 0, 1])
torch.save({"x": x, "y": y, "note": "from python"}, sys.argv[1] + "/train.pt")
test_x = torch.randn(8, 5, generator=g).requires_grad_()[::2, 1:4]
test_y = torch.randn(4, 2, generator=g, dtype=torch.float64)
torch.save({"x": test_x, "y": test_y}, sys.argv[1] + "/test.pt")
print(json.dumps({"x": x.tolist(), "y": y.tolist(),
                  "test_x": test_x.tolist(), "test_y": test_y.tolist()}))
)";

// Each value of `got` (float32 [n, m]) is the float nearest `want`'s.
void ExpectRows(const torch::Tensor& got, const nlohmann::json& want,
                const std::string& what) {
  ASSERT_EQ(got.size(0), static_cast<int64_t>(want.size())) << what;
  for (int64_t i = 0; i < got.size(0); ++i) {
    ASSERT_EQ(got.size(1), static_cast<int64_t>(want[i].size())) << what;
    for (int64_t j = 0; j < got.size(1); ++j) {
      EXPECT_EQ(got[i][j].item<float>(),
                static_cast<float>(want[i][j].get<double>()))
          << what << "[" << i << "][" << j << "]";
    }
  }
}

TEST(TensorFileTorchTest, ReadsExactlyWhatPythonTorchSaveWrote) {
  testing::ScratchDir dir;
  const auto r =
      pstrain::testing::Process({"/usr/bin/python3", "-c", kScript, dir.path()})
          .Wait(300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto want = nlohmann::json::parse(r.out);
  SourceOptions options;
  options.dataset = "tensors";
  options.data_dir = dir.path();

  auto train = TensorFile::Open(options, Split::kTrain);
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_EQ((*train)->shape().channels, 3);
  EXPECT_EQ((*train)->shape().num_classes, 3);
  const Batch batch = (*train)->Get(torch::arange(7), 0);
  ExpectRows(batch.images, want["x"], "train x");
  EXPECT_EQ(std::vector<int64_t>(batch.labels.data_ptr<int64_t>(),
                                 batch.labels.data_ptr<int64_t>() + 7),
            want["y"].get<std::vector<int64_t>>());

  auto test = TensorFile::Open(options, Split::kTest);
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  EXPECT_TRUE((*test)->y_is_float());
  const Batch rows = (*test)->Get(torch::arange(4), 0);
  EXPECT_FALSE(rows.images.requires_grad());
  ExpectRows(rows.images, want["test_x"], "test x");
  ExpectRows(rows.labels, want["test_y"], "test y");
}

}  // namespace
}  // namespace pstrain::data
