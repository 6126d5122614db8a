// SliceCompressors: each server's slices are coded by their own rule, and
// preparing a model key codes its slices on every server that has a
// compressor.

#include "worker/slice_compressors.h"

#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "wire/compression.h"

namespace pstrain::worker {
namespace {

// Model key 0, float32 [4, 2], rows [0, 2) on server 0 and [2, 4) on
// server 1; key 1, float32 [2], whole on server 1.
ps::ShardPlan TwoServerCodedPlan() {
  ps::ShardPlan plan;
  plan.num_servers = 2;
  plan.slices = {
      {0, 0, 2, 16, 0, false}, {0, 2, 4, 16, 1, false}, {1, 0, 1, 8, 1, true}};
  plan.by_server = {{0}, {1, 2}};
  return plan;
}

ps::CompressionSpec Fp16Everywhere() {
  ps::CompressionSpec c;
  c.push = wire::Codec::kFp16;
  c.min_bytes = 0;
  return c;
}

// The values the record of `codec` decodes to, `n` of them.
std::vector<float> DecodedRecord(wire::Codec codec,
                                 const std::vector<uint8_t>& record, size_t n) {
  std::vector<float> out(n, 0.0f);
  wire::DecodeAdd(codec, {}, record.data(), record.size(), n, 1.0f, out.data());
  return out;
}

TEST(SliceCompressorsTest, PreparingAKeyCodesItsSlicesOnEveryServer) {
  const ps::ShardPlan plan = TwoServerCodedPlan();
  at::Tensor grad0 = torch::zeros({4, 2});
  at::Tensor grad1 = torch::zeros({2});
  SliceCompressors c;
  EXPECT_FALSE(c.codes()) << "raw by default";
  c.Plan(Fp16Everywhere(), plan, 2);
  EXPECT_TRUE(c.codes());
  EXPECT_EQ(c.of(0), nullptr);
  c.Make(0, {grad0.narrow(0, 0, 2)}, {true}, {false}, 1);
  c.Make(1, {grad0.narrow(0, 2, 2), grad1}, {true, true}, {false, false}, 2);
  ASSERT_NE(c.of(0), nullptr);
  ASSERT_NE(c.of(1), nullptr);
  ASSERT_TRUE(c.of(1)->compressed(0));

  grad0.copy_(torch::arange(8, torch::kFloat32).view({4, 2}));
  grad1.fill_(5.0f);
  c.Prepare(0);
  EXPECT_EQ(DecodedRecord(wire::Codec::kFp16, c.of(0)->record(0), 4),
            (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(DecodedRecord(wire::Codec::kFp16, c.of(1)->record(0), 4),
            (std::vector<float>{4, 5, 6, 7}));
  // Key 1 was not prepared: its record is still a zero gradient's.
  EXPECT_EQ(DecodedRecord(wire::Codec::kFp16, c.of(1)->record(1), 2),
            (std::vector<float>{0, 0}));
}

TEST(SliceCompressorsTest, AServerOfRawSlicesHasNone) {
  SliceCompressors c;
  c.Plan(Fp16Everywhere(), TwoServerCodedPlan(), 2);
  at::Tensor grad = torch::zeros({2, 2});
  c.Make(0, {grad}, {false}, {false}, 1);  // not trained: raw
  EXPECT_EQ(c.of(0), nullptr);
  c.Prepare(0);  // nothing to code, nothing to fail
  EXPECT_EQ(c.of(0), nullptr);
}

}  // namespace
}  // namespace pstrain::worker
