#include "ps/job/tensor_codec.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pstrain::ps {
namespace {

TEST(TensorCodecTest, DescribesShapeDtypeAndBytes) {
  auto t = torch::zeros({3, 4}, torch::kFloat64);
  wire::TensorDesc d = DescribeTensor(5, t);
  EXPECT_EQ(d.key, 5u);
  EXPECT_EQ(d.dtype, wire::DType::kFloat64);
  EXPECT_EQ(d.ndim, 2);
  EXPECT_EQ(d.dims[1], 4);
  EXPECT_EQ(d.nbytes, 96u);
  EXPECT_TRUE(CheckDescMatches(d, 5, t, "push_pull").ok());
  Status s = CheckDescMatches(d, 5, torch::zeros({3, 5}, torch::kFloat64),
                              "push_pull");
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(),
            "push_pull: tensor 5 is key 5 float64 [3,4], expected key 5 "
            "float64 [3,5]");
}

TEST(TensorCodecTest, EveryWireDtypeMapsBack) {
  for (auto type :
       {torch::kFloat32, torch::kFloat64, torch::kFloat16, torch::kBFloat16,
        torch::kInt64, torch::kInt32, torch::kInt8, torch::kUInt8}) {
    auto d = ToWireDType(type);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(ToScalarType(*d), type);
  }
  EXPECT_FALSE(ToWireDType(torch::kBool).ok());
}

TEST(TensorCodecTest, FingerprintMismatchNamesFirstDifferingKey) {
  std::vector<wire::KeySpec> server = {
      KeySpecOf("fc1.weight", torch::zeros({256, 784})),
      KeySpecOf("fc1.bias", torch::zeros({256}))};
  auto worker = server;
  EXPECT_TRUE(CompareFingerprints(server, worker).ok());
  worker[1] = KeySpecOf("fc1.bias", torch::zeros({128}));
  Status s = CompareFingerprints(server, worker);
  EXPECT_EQ(s.code(), StatusCode::kIncompatible);
  EXPECT_EQ(s.message(),
            "model differs at key 1 'fc1.bias': server has float32 [256], "
            "worker has float32 [128]");
  worker.pop_back();
  EXPECT_EQ(CompareFingerprints(server, worker).message(),
            "model differs: server has 2 parameters, worker has 1");
}

}  // namespace
}  // namespace pstrain::ps
