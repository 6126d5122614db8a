#include "ps/store/parameter_server.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "testing/shard.h"

namespace pstrain::ps {
namespace {

JobSpec Spec(Mode mode, int workers) {
  JobSpec s;
  s.mode = mode;
  s.lr = 0.5;
  s.momentum = 0;
  s.world_size = workers + 1;
  // Each push steps with --lr: the rule these tests are about (per_sample
  // has OptimizerTest.PerSamplePushStepsAShareOfTheLr).
  s.async_lr = "per_push";
  return s;
}

std::vector<at::Tensor> Params() {
  return {torch::tensor({1.0f, 2.0f, 3.0f}).requires_grad_(),
          torch::tensor({{10.0f}}).requires_grad_()};
}

// Delivers worker w's gradients (key 0 all `a`, key 1 all `b`) the way the
// Engine does: sync piece by piece into the accumulators, async into the
// worker's buffer.
void SetGrads(testing::Shard& ps, int w, float a, float b) {
  if (ps.buffers_pushes()) {
    ps.grad_buffer(w)[0].fill_(a);
    ps.grad_buffer(w)[1].fill_(b);
    return;
  }
  const float key0[3] = {a, a, a};
  ps.Accumulate(w, 0, 0, key0, sizeof(key0));
  ps.Accumulate(w, 1, 0, &b, 4);
}

// Key by key, a closed step computes bit for bit what one optimizer step
// over all keys does, and the version advances before the keys are stepped.
TEST(ParameterServerTest, SyncStepByKeyComputesWhatOneStepDoes) {
  for (const char* optimizer : {"sgd", "adam"}) {
    JobSpec spec = Spec(Mode::kSync, 1);
    spec.optimizer = optimizer;
    spec.momentum = 0.9;
    auto whole_params = Params(), keyed_params = Params();
    testing::Shard whole(spec, whole_params), keyed(spec, keyed_params);
    keyed.set_step_by_key(true);
    EXPECT_TRUE(keyed.version_complete());
    for (int v = 0; v < 3; ++v) {
      SetGrads(whole, 0, 0.5f * (v + 1), -1.0f);
      SetGrads(keyed, 0, 0.5f * (v + 1), -1.0f);
      ASSERT_TRUE(*whole.Push(0, v));
      ASSERT_TRUE(*keyed.Push(0, v));
      EXPECT_EQ(keyed.version(), static_cast<uint64_t>(v + 1));
      EXPECT_FALSE(keyed.version_complete());
      EXPECT_FALSE(keyed.step_order().stepped(0));
      EXPECT_FALSE(keyed_params[0].equal(whole_params[0])) << optimizer;
      EXPECT_EQ(keyed.UpdateNextKey(), 0);
      EXPECT_TRUE(keyed_params[0].equal(whole_params[0]))
          << optimizer << " step " << v;
      EXPECT_FALSE(keyed_params[1].equal(whole_params[1])) << optimizer;
      EXPECT_EQ(keyed.UpdateNextKey(), 1);
      EXPECT_EQ(keyed.UpdateNextKey(), -1);
      EXPECT_TRUE(keyed.version_complete());
      EXPECT_TRUE(keyed_params[1].equal(whole_params[1]))
          << optimizer << " step " << v;
    }
  }
}

TEST(ParameterServerTest, SyncAveragesThenStepsOnce) {
  auto params = Params();
  testing::Shard ps(Spec(Mode::kSync, 2), params);
  SetGrads(ps, 0, 1.0f, 4.0f);
  auto first = ps.Push(0, 0);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(*first);
  EXPECT_EQ(ps.version(), 0u);
  EXPECT_EQ(ps.MissingPushes(), std::vector<int>{1});
  EXPECT_FLOAT_EQ(params[0][0].item<float>(), 1.0f);  // nothing applied yet

  SetGrads(ps, 1, 3.0f, 0.0f);
  auto second = ps.Push(1, 0);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(*second);
  EXPECT_EQ(ps.version(), 1u);
  // mean grads (2, 2), lr 0.5: p - 1.
  EXPECT_FLOAT_EQ(params[0][0].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(params[0][2].item<float>(), 2.0f);
  EXPECT_FLOAT_EQ(params[1][0][0].item<float>(), 9.0f);
  EXPECT_EQ(ps.MissingPushes(), (std::vector<int>{0, 1}));
}

// A refused push (the Engine found NaN in a later piece) leaves its
// finite first key in the sums; DiscardStep closes the step without
// stepping, and the next step starts from clean sums.
TEST(ParameterServerTest, SyncDiscardedStepAdvancesVersionOnly) {
  auto params = Params();
  testing::Shard ps(Spec(Mode::kSync, 2), params);
  SetGrads(ps, 0, 1.0f, 4.0f);
  ASSERT_TRUE(ps.Push(0, 0).ok());
  const float key0[3] = {5.0f, 5.0f, 5.0f};
  ps.Accumulate(1, 0, 0, key0, sizeof(key0));  // worker 1's key 1 never arrives
  ps.DiscardStep();
  auto closed = ps.Push(1, 0);
  ASSERT_TRUE(closed.ok());
  EXPECT_TRUE(*closed);
  EXPECT_EQ(ps.version(), 1u);
  EXPECT_EQ(ps.discarded_steps(), 1u);
  EXPECT_TRUE(torch::equal(params[0], torch::tensor({1.0f, 2.0f, 3.0f})));
  EXPECT_TRUE(torch::equal(params[1], torch::tensor({{10.0f}})));

  SetGrads(ps, 0, 1.0f, 4.0f);
  SetGrads(ps, 1, 3.0f, 0.0f);
  ASSERT_TRUE(ps.Push(0, 1).ok());
  ASSERT_TRUE(ps.Push(1, 1).ok());
  EXPECT_EQ(ps.version(), 2u);
  EXPECT_EQ(ps.discarded_steps(), 1u);
  EXPECT_FLOAT_EQ(params[0][0].item<float>(), 0.0f);  // as in a clean step
  EXPECT_FLOAT_EQ(params[1][0][0].item<float>(), 9.0f);
}

// Pieces of three workers interleave in any order; each element must end as
// the mean of the three, whichever worker's piece came first or last (sums
// in arrival order, so equal to rounding).
TEST(ParameterServerTest, SyncReducesInterleavedPiecesOfManyWorkers) {
  const int64_t n = ParameterServer::kPieceBytes / 4 * 2 + 10;  // 3 pieces
  auto params = std::vector<at::Tensor>{torch::zeros({n}).requires_grad_()};
  auto spec = Spec(Mode::kSync, 3);
  spec.lr = 1.0;
  testing::Shard ps(spec, params);
  std::vector<at::Tensor> grads;
  for (int w = 0; w < 3; ++w)
    grads.push_back(torch::randn({n}));
  const uint64_t piece = ParameterServer::kPieceBytes, bytes = n * 4;
  // Piece p of worker w, in an order where first and last differ by piece.
  const int order[9][2] = {{0, 0}, {1, 1}, {2, 2}, {1, 0}, {2, 1},
                           {0, 2}, {2, 0}, {0, 1}, {1, 2}};
  for (const auto& [w, p] : order) {
    const uint64_t off = p * piece;
    ps.Accumulate(w, 0, off, static_cast<char*>(grads[w].data_ptr()) + off,
                  std::min(piece, bytes - off));
  }
  for (int w = 0; w < 3; ++w)
    ASSERT_TRUE(ps.Push(w, 0).ok());
  auto expected = -((torch::zeros({n}) + grads[0] + grads[1] + grads[2]) / 3);
  EXPECT_TRUE(torch::allclose(params[0].detach(), expected, 0, 1e-6));
  EXPECT_GT(expected.abs().max().item<float>(), 0.1);
}

TEST(ParameterServerTest, SyncAccumulatorStartsEmptyEachStep) {
  auto params = Params();
  testing::Shard ps(Spec(Mode::kSync, 2), params);
  for (uint64_t v = 0; v < 3; ++v) {
    SetGrads(ps, 0, 1.0f, 0.0f);
    SetGrads(ps, 1, 1.0f, 0.0f);
    ASSERT_TRUE(ps.Push(0, v).ok());
    ASSERT_TRUE(ps.Push(1, v).ok());
  }
  EXPECT_FLOAT_EQ(params[0][0].item<float>(), 1.0f - 3 * 0.5f);
}

TEST(ParameterServerTest, SyncRefusesStaleAndDoublePushes) {
  testing::Shard ps(Spec(Mode::kSync, 2), Params());
  EXPECT_TRUE(ps.CheckPush(0, 0).ok());
  ASSERT_TRUE(ps.Push(0, 0).ok());
  EXPECT_EQ(ps.CheckPush(0, 0).message(), "second push for version 0");
  Status twice = ps.Push(0, 0).status();
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(twice.message(), "second push for version 0");
  Status stale = ps.Push(1, 5).status();
  EXPECT_EQ(stale.message(),
            "push for version 5 while the server is at version 0");
}

TEST(ParameterServerTest, AsyncAppliesEachPushAtOnce) {
  auto params = Params();
  testing::Shard ps(Spec(Mode::kAsync, 2), params);
  SetGrads(ps, 1, 2.0f, 2.0f);
  auto r = ps.Push(1, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r);
  EXPECT_EQ(ps.version(), 1u);
  EXPECT_FLOAT_EQ(params[0][0].item<float>(), 0.0f);
  SetGrads(ps, 0, 2.0f, 2.0f);
  ASSERT_TRUE(ps.Push(0, 0).ok());  // stale pushes are fine in async
  EXPECT_EQ(ps.version(), 2u);
  EXPECT_FLOAT_EQ(params[1][0][0].item<float>(), 8.0f);
  EXPECT_EQ(ps.pushes(), 2u);
}

TEST(ParameterServerTest, MomentumIsLibtorchs) {
  auto params = Params();
  auto spec = Spec(Mode::kAsync, 1);
  spec.momentum = 0.9;
  testing::Shard ps(spec, params);
  auto ref = Params();
  torch::optim::SGD sgd(ref, torch::optim::SGDOptions(0.5).momentum(0.9));
  for (int i = 0; i < 4; ++i) {
    SetGrads(ps, 0, 0.1f * i, 1.0f);
    ASSERT_TRUE(ps.Push(0, i).ok());
    ref[0].mutable_grad() = torch::full({3}, 0.1f * i);
    ref[1].mutable_grad() = torch::ones({1, 1});
    sgd.step();
  }
  EXPECT_TRUE(torch::equal(params[0], ref[0]));
  EXPECT_TRUE(torch::equal(params[1], ref[1]));
}

// --backup_workers 1 of 3: the step closes on the second push, averaging
// those two; the third push, for a closed step, is dropped and counted.
TEST(ParameterServerTest, BackupWorkersCloseTheStepWithoutTheLastAndDropIt) {
  auto params = Params();
  JobSpec spec = Spec(Mode::kSync, 3);
  spec.backup_workers = 1;
  testing::Shard ps(spec, params);
  ASSERT_TRUE(ps.buffers_pushes());
  SetGrads(ps, 2, 1.0f, 4.0f);
  ASSERT_FALSE(*ps.Push(2, 0));
  SetGrads(ps, 0, 3.0f, 0.0f);
  auto closed = ps.Push(0, 0);
  ASSERT_TRUE(closed.ok());
  EXPECT_TRUE(*closed);
  EXPECT_EQ(ps.version(), 1u);
  // mean grads (2, 2) of workers 0 and 2, lr 0.5: p - 1.
  EXPECT_FLOAT_EQ(params[0][0].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(params[1][0][0].item<float>(), 9.0f);

  SetGrads(ps, 1, 100.0f, 100.0f);  // the straggler, computed on version 0
  auto late = ps.Push(1, 0);
  ASSERT_TRUE(late.ok());
  EXPECT_FALSE(*late);
  EXPECT_EQ(ps.dropped_pushes(), 1u);
  EXPECT_EQ(ps.version(), 1u);
  EXPECT_FLOAT_EQ(params[0][0].item<float>(), 0.0f);  // not applied
  EXPECT_EQ(ps.pushes_this_step(), 0);
  // A push from the future is still an error.
  EXPECT_EQ(ps.Push(1, 5).status().code(), StatusCode::kInvalidArgument);
}

// --step_timeout: the Engine closes a step with the pushes it has.
TEST(ParameterServerTest, CloseStepAveragesThePushesIn) {
  auto params = Params();
  JobSpec spec = Spec(Mode::kSync, 3);
  spec.step_timeout = 1;
  testing::Shard ps(spec, params);
  EXPECT_FALSE(ps.CloseStep());  // nothing in: no step
  SetGrads(ps, 1, 2.0f, 6.0f);
  ASSERT_FALSE(*ps.Push(1, 0));
  EXPECT_EQ(ps.MissingPushes(), (std::vector<int>{0, 2}));
  EXPECT_TRUE(ps.CloseStep());
  EXPECT_EQ(ps.version(), 1u);
  EXPECT_FLOAT_EQ(params[0][0].item<float>(), 0.0f);     // 1 - 0.5 * 2
  EXPECT_FLOAT_EQ(params[1][0][0].item<float>(), 7.0f);  // 10 - 0.5 * 6
}

// --server_threads: disjoint groups of keys, each stepped by its own
// optimizer on its own thread, compute what one optimizer computes.
TEST(ParameterServerTest, ServerThreadsStepTheSameAsOneThread) {
  auto run = [](int threads) {
    torch::manual_seed(7);
    std::vector<at::Tensor> params = {torch::randn({64, 33}).requires_grad_(),
                                      torch::randn({64}).requires_grad_(),
                                      torch::randn({10, 64}).requires_grad_(),
                                      torch::randn({10}).requires_grad_()};
    JobSpec spec = Spec(Mode::kAsync, 1);
    spec.optimizer = "adam";
    spec.lr = 0.01;
    spec.server_threads = threads;
    testing::Shard ps(spec, params);
    EXPECT_EQ(ps.optimizers().size(),
              static_cast<size_t>(std::min(threads, 4)));
    for (int step = 0; step < 5; ++step) {
      for (size_t k = 0; k < params.size(); ++k) {
        ps.grad_buffer(0)[k].copy_(torch::randn(params[k].sizes()));
      }
      EXPECT_TRUE(*ps.Push(0, step));
    }
    return params;
  };
  auto one = run(1);
  for (int threads : {2, 3, 8}) {
    auto many = run(threads);
    for (size_t k = 0; k < one.size(); ++k) {
      EXPECT_TRUE(torch::equal(one[k], many[k]))
          << threads << " threads, key " << k;
    }
  }
  torch::manual_seed(7);
  EXPECT_FALSE(torch::equal(one[0], torch::randn({64, 33})));  // it trained
}

}  // namespace
}  // namespace pstrain::ps
