// Buffers (keys that require no grad: BatchNorm's running statistics) on the
// server: never seen by the optimizer; the mean of a sync step's pushes,
// each async push's values in order.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/store/parameter_server.h"
#include "testing/shard.h"

namespace pstrain::ps {
namespace {

JobSpec Spec(Mode mode, int workers) {
  JobSpec s;
  s.mode = mode;
  s.lr = 0.5;
  s.momentum = 0.9;
  s.weight_decay = 0.1;  // would move a buffer the optimizer saw
  s.world_size = workers + 1;
  return s;
}

// Key 0 a parameter, key 1 a float buffer (running_mean), key 2 an int64
// buffer (num_batches_tracked, 0-dim).
std::vector<at::Tensor> Keys() {
  return {torch::tensor({1.0f, 2.0f}).requires_grad_(),
          torch::tensor({0.0f, 0.0f, 0.0f}), torch::tensor(int64_t{0})};
}

// Worker w's push: gradient g for key 0, buffer values m and count n.
void SetPush(testing::Shard& ps, int w, float g, float m, int64_t n) {
  const float grad[2] = {g, g};
  const float mean[3] = {m, m + 1, m + 2};
  if (ps.buffers_pushes()) {
    ps.grad_buffer(w)[0].fill_(g);
    ps.grad_buffer(w)[1].copy_(torch::tensor({m, m + 1, m + 2}));
    ps.grad_buffer(w)[2].fill_(n);
    return;
  }
  ps.Accumulate(w, 0, 0, grad, sizeof(grad));
  ps.Accumulate(w, 1, 0, mean, sizeof(mean));
  ps.Accumulate(w, 2, 0, &n, sizeof(n));
}

TEST(ParameterServerBuffersTest, SyncBuffersBecomeTheMeanOfThePushes) {
  for (bool by_key : {false, true}) {
    auto keys = Keys();
    testing::Shard ps(Spec(Mode::kSync, 2), keys);
    ps.set_step_by_key(by_key);
    SetPush(ps, 0, 1.0f, 2.0f, 5);
    SetPush(ps, 1, 3.0f, 4.0f, 5);
    ASSERT_FALSE(*ps.Push(0, 0));
    ASSERT_TRUE(*ps.Push(1, 0));
    ps.UpdateAllKeys();
    EXPECT_TRUE(keys[1].equal(torch::tensor({3.0f, 4.0f, 5.0f}))) << keys[1];
    EXPECT_EQ(keys[2].item<int64_t>(), 5);
    // The parameter took one SGD step on the mean gradient 2 (weight decay
    // 0.1, no momentum yet): 1 - 0.5 * (2 + 0.1).
    EXPECT_FLOAT_EQ(keys[0][0].item<float>(), 1.0f - 0.5f * 2.1f);
    EXPECT_FALSE(keys[1].requires_grad());
  }
}

TEST(ParameterServerBuffersTest, BufferedSyncAveragesTheBuffersIn) {
  auto keys = Keys();
  JobSpec spec = Spec(Mode::kSync, 3);
  spec.backup_workers = 1;
  testing::Shard ps(spec, keys);
  SetPush(ps, 0, 1.0f, 2.0f, 7);
  SetPush(ps, 2, 1.0f, 6.0f, 8);
  ASSERT_FALSE(*ps.Push(0, 0));
  ASSERT_TRUE(*ps.Push(2, 0));
  EXPECT_TRUE(keys[1].equal(torch::tensor({4.0f, 5.0f, 6.0f}))) << keys[1];
  EXPECT_EQ(keys[2].item<int64_t>(), 7);  // (7 + 8) / 2, truncated
}

TEST(ParameterServerBuffersTest, AsyncBuffersTakeEachPushInOrder) {
  auto keys = Keys();
  testing::Shard ps(Spec(Mode::kAsync, 2), keys);
  SetPush(ps, 1, 1.0f, 9.0f, 3);
  ASSERT_TRUE(*ps.Push(1, 0));
  EXPECT_TRUE(keys[1].equal(torch::tensor({9.0f, 10.0f, 11.0f})));
  EXPECT_EQ(keys[2].item<int64_t>(), 3);
  SetPush(ps, 0, 1.0f, -1.0f, 2);
  ASSERT_TRUE(*ps.Push(0, 0));  // stale: the parameter's lr shrinks, not this
  EXPECT_TRUE(keys[1].equal(torch::tensor({-1.0f, 0.0f, 1.0f})));
  EXPECT_EQ(keys[2].item<int64_t>(), 2);
}

TEST(ParameterServerBuffersTest, DiscardedStepLeavesBuffers) {
  auto keys = Keys();
  testing::Shard ps(Spec(Mode::kSync, 1), keys);
  SetPush(ps, 0, 1.0f, 2.0f, 5);
  ps.DiscardStep();
  ASSERT_TRUE(*ps.Push(0, 0));
  EXPECT_TRUE(keys[1].equal(torch::zeros({3})));
  EXPECT_EQ(keys[2].item<int64_t>(), 0);
}

TEST(ParameterServerBuffersTest, OptimizerHoldsOnlyParameters) {
  auto keys = Keys();
  testing::Shard ps(Spec(Mode::kSync, 1), keys);
  size_t held = 0;
  for (auto* o : ps.optimizers()) {
    for (const auto& g : o->param_groups())
      held += g.params().size();
  }
  EXPECT_EQ(held, 1u);
  EXPECT_EQ(ps.num_keys(), 3);
}

}  // namespace
}  // namespace pstrain::ps
