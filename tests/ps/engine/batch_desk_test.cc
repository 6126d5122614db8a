// BatchDesk: --placement server's batches checked against the model's
// shapes, read into tensors reused while their shapes stay, and the
// runner's gradients handed to the rule as a push's pieces; without an
// Engine.

#include "ps/engine/batch_desk.h"

#include <limits>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/key_formats.h"
#include "ps/engine/peer.h"
#include "ps/engine/push_reader.h"
#include "ps/job/tensor_codec.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"

namespace pstrain::ps {
namespace {

wire::PushBatch Batch(std::vector<int64_t> x, std::vector<int64_t> y,
                      bool y_float = false) {
  wire::PushBatch b;
  b.x = DescribeTensor(0, torch::zeros(x));
  b.y = DescribeTensor(1,
                       torch::zeros(y, y_float ? torch::kFloat : torch::kLong));
  return b;
}

BatchDesk Desk() {
  BatchDesk desk;
  desk.set_runner(nullptr, BatchShapes{{1, 28, 28}, {}, false});
  return desk;
}

TEST(BatchDeskTest, ABatchFitsOnlyTheModelsShapes) {
  const BatchDesk desk = Desk();
  EXPECT_TRUE(desk.Check(Batch({8, 1, 28, 28}, {8})).ok());
  Status x = desk.Check(Batch({8, 3, 28, 28}, {8}));
  EXPECT_EQ(x.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(x.message(),
            "push_batch: x is float32 [8, 3, 28, 28]; the model takes "
            "float32 [B, 1, 28, 28]");
  EXPECT_EQ(desk.Check(Batch({8, 1, 28, 28}, {8}, true)).message(),
            "push_batch: y is float32 [8]; expected int64 [B]");
}

TEST(BatchDeskTest, ABatchLandsInTensorsReusedWhileTheirShapesStay) {
  WorkerPeer peer(Peer(), 0);
  peer.batch.msg = Batch({8, 1, 28, 28}, {8});
  ReadPlan plan;
  BatchDesk::Plan(peer, &plan);
  ASSERT_EQ(plan.buffers.size(), 2u);
  EXPECT_EQ(plan.buffers[0].data, peer.batch.x.data_ptr());
  EXPECT_EQ(plan.buffers[0].bytes, 8u * 28 * 28 * 4);
  EXPECT_EQ(plan.buffers[1].bytes, 8u * 8);
  EXPECT_EQ(peer.batch.y.scalar_type(), at::kLong);
  void* x = peer.batch.x.data_ptr();
  ReadPlan same;
  BatchDesk::Plan(peer, &same);
  EXPECT_EQ(peer.batch.x.data_ptr(), x);  // the same shape: reused
  peer.batch.msg = Batch({4, 1, 28, 28}, {4});
  ReadPlan smaller;
  BatchDesk::Plan(peer, &smaller);
  EXPECT_EQ(peer.batch.x.size(0), 4);
}

TEST(BatchDeskTest,
     TheRunnersGradientsGoToTheRuleThroughThePushReaderUnlessNotFinite) {
  JobSpec spec;
  spec.mode = Mode::kSync;
  spec.world_size = 2;
  spec.lr = 1.0;
  spec.momentum = 0;
  std::vector<at::Tensor> params = {torch::zeros({3}).requires_grad_(),
                                    torch::zeros({1}).requires_grad_()};
  ParameterServer store(spec, params);
  auto rule = MakeUpdateRule(spec, &store);
  KeyFormats formats(
      spec, {KeySpecOf("w", params[0]), KeySpecOf("b", params[1])}, store);
  PushReader reader(&store, rule.get(), &formats);
  WorkerPeer peer(Peer(), 0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<at::Tensor> refused = {torch::ones({3}), torch::full({1}, nan)};
  reader.AddBatch(peer, refused);
  EXPECT_EQ(peer.refused_key, 1);
  // Key 0's finite piece is in the sums already: the step is skipped.
  ASSERT_TRUE(*rule->Push(0, 0, /*refused=*/true));
  EXPECT_TRUE(torch::equal(params[0], torch::zeros({3})));
  std::vector<at::Tensor> keys = {torch::full({3}, 2.0f), torch::ones({1})};
  reader.AddBatch(peer, keys);
  EXPECT_EQ(peer.refused_key, -1);
  ASSERT_TRUE(*rule->Push(0, 1, false));
  rule->UpdateAllKeys();
  EXPECT_TRUE(torch::equal(params[0], torch::full({3}, -2.0f)));
  EXPECT_FLOAT_EQ(params[1].item<float>(), -1.0f);
}

}  // namespace
}  // namespace pstrain::ps
