#include "ps/job/optimizer.h"

#include <cmath>
#include <functional>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/store/parameter_server.h"
#include "testing/shard.h"

namespace pstrain::ps {
namespace {

JobSpec Spec(const std::string& optimizer) {
  JobSpec s;
  s.mode = Mode::kAsync;
  s.optimizer = optimizer;
  s.lr = 0.1;
  s.momentum = 0.5;
  s.weight_decay = 0.01;
  s.betas = {0.8, 0.99};
  s.world_size = 2;
  return s;
}

std::vector<at::Tensor> Params() {
  return {torch::tensor({1.0f, -2.0f, 3.0f}).requires_grad_(),
          torch::tensor({{0.5f, 4.0f}}).requires_grad_()};
}

at::Tensor Grad(int step, int key) {
  return key == 0 ? torch::tensor({0.3f * step - 0.2f, 1.0f, -0.7f})
                  : torch::tensor({{0.1f * step, -0.4f}});
}

using MakeRef = std::function<std::unique_ptr<torch::optim::Optimizer>(
    std::vector<at::Tensor>)>;

// Steps a ParameterServer with `spec` and libtorch's own optimizer from
// `make_ref` on the same gradients: the parameters must match bit for bit.
void ExpectSameAsLibtorch(const JobSpec& spec, const MakeRef& make_ref) {
  auto params = Params();
  testing::Shard ps(spec, params);
  auto ref = Params();
  auto opt = make_ref(ref);
  for (int i = 0; i < 5; ++i) {
    for (int k = 0; k < 2; ++k) {
      ps.grad_buffer(0)[k].copy_(Grad(i, k));
      ref[k].mutable_grad() = Grad(i, k);
    }
    ASSERT_TRUE(ps.Push(0, i).ok());
    opt->step();
  }
  for (int k = 0; k < 2; ++k) {
    EXPECT_TRUE(torch::equal(params[k], ref[k]))
        << spec.optimizer << " key " << k << "\n"
        << params[k] << "\n"
        << ref[k];
  }
  EXPECT_FALSE(torch::equal(params[0], Params()[0])) << "nothing moved";
}

TEST(OptimizerTest, SgdNesterovIsLibtorchs) {
  auto spec = Spec("sgd");
  spec.nesterov = true;
  ExpectSameAsLibtorch(spec, [](std::vector<at::Tensor> p) {
    return std::make_unique<torch::optim::SGD>(
        p,
        torch::optim::SGDOptions(0.1).momentum(0.5).nesterov(true).weight_decay(
            0.01));
  });
}

TEST(OptimizerTest, AdamIsLibtorchs) {
  ExpectSameAsLibtorch(Spec("adam"), [](std::vector<at::Tensor> p) {
    return std::make_unique<torch::optim::Adam>(
        p,
        torch::optim::AdamOptions(0.1).betas({0.8, 0.99}).weight_decay(0.01));
  });
}

TEST(OptimizerTest, AdamWIsLibtorchs) {
  auto spec = Spec("adamw");
  spec.eps = 1e-6;
  ExpectSameAsLibtorch(spec, [](std::vector<at::Tensor> p) {
    return std::make_unique<torch::optim::AdamW>(p,
                                                 torch::optim::AdamWOptions(0.1)
                                                     .betas({0.8, 0.99})
                                                     .eps(1e-6)
                                                     .weight_decay(0.01));
  });
}

TEST(OptimizerTest, AdagradIsLibtorchs) {
  ExpectSameAsLibtorch(Spec("adagrad"), [](std::vector<at::Tensor> p) {
    return std::make_unique<torch::optim::Adagrad>(
        p, torch::optim::AdagradOptions(0.1).eps(1e-10).weight_decay(0.01));
  });
}

TEST(OptimizerTest, RmspropIsLibtorchs) {
  ExpectSameAsLibtorch(Spec("rmsprop"), [](std::vector<at::Tensor> p) {
    return std::make_unique<torch::optim::RMSprop>(
        p,
        torch::optim::RMSpropOptions(0.1).momentum(0.5).eps(1e-8).weight_decay(
            0.01));
  });
}

TEST(OptimizerTest, AutoScheduleIsCosineWhenTheLengthIsKnown) {
  using Kind = LrSchedule::Kind;
  auto kind = [](int64_t versions) {
    auto s = ResolveLrSchedule("auto", versions);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? s->kind : Kind::kStep;
  };
  EXPECT_EQ(kind(937), Kind::kCosine);
  EXPECT_EQ(kind(1), Kind::kCosine);
  EXPECT_EQ(kind(0), Kind::kConstant);  // length unknown
  // A schedule named is the schedule used.
  auto named = ResolveLrSchedule("constant", 300);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->kind, Kind::kConstant);
  EXPECT_FALSE(ResolveLrSchedule("step:0:1", 300).ok());

  JobSpec spec;  // the tutorial's Net
  EXPECT_EQ(LrScheduleOf(spec)->kind, Kind::kConstant);
  spec.max_steps = 10;
  EXPECT_EQ(LrScheduleOf(spec)->kind, Kind::kCosine);
  spec.max_steps = 0;
  spec.total_steps = 937;  // rank 0 counted the run
  EXPECT_EQ(LrScheduleOf(spec)->kind, Kind::kCosine);
}

TEST(OptimizerTest, WarmupRisesLinearlyToTheSchedule) {
  JobSpec spec;
  spec.lr_schedule = "constant";
  spec.warmup_steps = 4;
  spec.world_size = 3;
  auto sync = LrScheduleOf(spec);
  ASSERT_TRUE(sync.ok());
  EXPECT_EQ(sync->warmup_versions, 4);
  EXPECT_DOUBLE_EQ(ScheduledLr(*sync, 0.8, 0, 0), 0.2);
  EXPECT_DOUBLE_EQ(ScheduledLr(*sync, 0.8, 2, 0), 0.6);
  EXPECT_DOUBLE_EQ(ScheduledLr(*sync, 0.8, 3, 0), 0.8);
  EXPECT_DOUBLE_EQ(ScheduledLr(*sync, 0.8, 100, 0), 0.8);
  spec.mode = Mode::kAsync;  // a worker's step is two versions
  auto async = LrScheduleOf(spec);
  ASSERT_TRUE(async.ok());
  EXPECT_EQ(async->warmup_versions, 8);
  EXPECT_DOUBLE_EQ(ScheduledLr(*async, 0.8, 0, 0), 0.1);
  // Under a cosine the warm-up multiplies the annealed lr.
  spec.lr_schedule = "cosine";
  spec.max_steps = 50;
  auto cosine = LrScheduleOf(spec);
  ASSERT_TRUE(cosine.ok());
  EXPECT_DOUBLE_EQ(ScheduledLr(*cosine, 0.8, 1, 100),
                   0.4 * (1 + std::cos(M_PI / 100)) * 2 / 8);
}

TEST(OptimizerTest, AsyncLrShareIsOnePushOfASyncStep) {
  JobSpec spec;
  spec.world_size = 5;                  // four workers
  EXPECT_EQ(*AsyncLrShare(spec), 1.0);  // sync
  spec.mode = Mode::kAsync;
  EXPECT_EQ(*AsyncLrShare(spec), 0.25);
  spec.mode = Mode::kSsp;
  EXPECT_EQ(*AsyncLrShare(spec), 0.25);
  spec.async_lr = "per_push";
  EXPECT_EQ(*AsyncLrShare(spec), 1.0);
  spec.async_lr = "half";
  EXPECT_EQ(AsyncLrShare(spec).status().message(),
            "--async_lr 'half': expected per_sample or per_push");
  EXPECT_EQ(ValidateJobSpec(spec).message(),
            "--async_lr 'half': expected per_sample or per_push");
}

TEST(OptimizerTest, AsyncMomentumKeepsTheTotalMomentum) {
  JobSpec spec;
  spec.momentum = 0.9;
  spec.world_size = 3;
  spec.async_momentum = "auto";
  EXPECT_EQ(*AsyncMomentum(spec), 0.9);  // sync: no staleness
  spec.mode = Mode::kAsync;
  EXPECT_NEAR(*AsyncMomentum(spec), 0.8, 1e-12);
  spec.world_size = 5;
  EXPECT_NEAR(*AsyncMomentum(spec), 0.6, 1e-12);
  spec.world_size = 12;  // 11 workers: their staleness is momentum enough
  EXPECT_EQ(*AsyncMomentum(spec), 0.0);
  spec.async_momentum = "keep";
  EXPECT_EQ(*AsyncMomentum(spec), 0.9);
  spec.async_momentum = "less";
  EXPECT_EQ(AsyncMomentum(spec).status().message(),
            "--async_momentum 'less': expected lookahead_or_keep, keep, auto "
            "or lookahead");
}

// Four workers, sgd without momentum, gradient 1: a fresh push moves the
// parameter by lr / 4 (per_sample) or lr (per_push); a push two versions
// stale, by a half of that under --staleness_lr inverse.
TEST(OptimizerTest, PerSamplePushStepsAShareOfTheLr) {
  for (const char* rule : {"per_sample", "per_push"}) {
    JobSpec spec = Spec("sgd");
    spec.world_size = 5;
    spec.momentum = 0;
    spec.weight_decay = 0;
    spec.lr = 1;
    spec.lr_schedule = "constant";
    spec.async_lr = rule;
    spec.staleness_lr = "inverse";
    auto params = std::vector<at::Tensor>{torch::zeros({1}).requires_grad_()};
    testing::Shard ps(spec, params);
    const float share = std::string(rule) == "per_sample" ? 0.25f : 1.0f;
    ps.grad_buffer(0)[0].fill_(1);
    ASSERT_TRUE(ps.Push(0, 0).ok());
    EXPECT_EQ(params[0].item<float>(), -share) << rule;
    ps.grad_buffer(1)[0].fill_(1);
    ASSERT_TRUE(ps.Push(1, 0).ok());
    ps.grad_buffer(2)[0].fill_(1);
    ASSERT_TRUE(ps.Push(2, 0).ok());  // computed on 0, applied at 2
    EXPECT_EQ(params[0].item<float>(), -2.5f * share) << rule;
  }
}

// --async_momentum auto builds the optimizer with the lower momentum: the
// second push of gradient 1 moves by lr * (1 + 0.8), not lr * (1 + 0.9).
TEST(OptimizerTest, AutoAsyncMomentumIsTheOptimizers) {
  JobSpec spec = Spec("sgd");
  spec.world_size = 3;
  spec.momentum = 0.9;
  spec.weight_decay = 0;
  spec.lr = 1;
  spec.lr_schedule = "constant";
  spec.async_lr = "per_push";
  spec.staleness_lr = "none";
  spec.async_momentum = "auto";
  auto params = std::vector<at::Tensor>{torch::zeros({1}).requires_grad_()};
  testing::Shard ps(spec, params);
  for (int v = 0; v < 2; ++v) {
    ps.grad_buffer(0)[0].fill_(1);
    ASSERT_TRUE(ps.Push(0, v).ok());
  }
  EXPECT_NEAR(params[0].item<float>(), -(1 + 1.8f), 1e-6);
}

TEST(OptimizerTest, SchedulesValues) {
  auto constant = ParseLrSchedule("constant");
  ASSERT_TRUE(constant.ok());
  EXPECT_EQ(ScheduledLr(*constant, 0.1, 12345, 0), 0.1);

  auto step = ParseLrSchedule("step:10:0.5");
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(ScheduledLr(*step, 0.8, 0, 0), 0.8);
  EXPECT_EQ(ScheduledLr(*step, 0.8, 9, 0), 0.8);
  EXPECT_EQ(ScheduledLr(*step, 0.8, 10, 0), 0.4);
  EXPECT_EQ(ScheduledLr(*step, 0.8, 35, 0), 0.1);

  auto cosine = ParseLrSchedule("cosine");
  ASSERT_TRUE(cosine.ok());
  EXPECT_DOUBLE_EQ(ScheduledLr(*cosine, 0.8, 0, 100), 0.8);
  EXPECT_DOUBLE_EQ(ScheduledLr(*cosine, 0.8, 50, 100), 0.4);
  EXPECT_DOUBLE_EQ(ScheduledLr(*cosine, 0.8, 25, 100),
                   0.4 * (1 + std::cos(M_PI / 4)));
  EXPECT_NEAR(ScheduledLr(*cosine, 0.8, 100, 100), 0.0, 1e-15);
  EXPECT_NEAR(ScheduledLr(*cosine, 0.8, 150, 100), 0.0,
              1e-15);  // stays at the end

  for (const auto& bad :
       {"", "step", "step:10", "step:x:0.5", "step:10:0", "cos"}) {
    EXPECT_FALSE(ParseLrSchedule(bad).ok()) << bad;
  }
}

TEST(OptimizerTest, ScheduleVersionsCountsPushesInAsync) {
  JobSpec s;
  s.max_steps = 10;
  s.world_size = 4;
  EXPECT_EQ(ScheduleVersions(s), 10);
  s.mode = Mode::kAsync;
  EXPECT_EQ(ScheduleVersions(s), 30);
  s.total_steps = 7;
  EXPECT_EQ(ScheduleVersions(s), 7);
}

// The server sets the scheduled lr before each step: with sgd without
// momentum and grad 1, version v moves each parameter by lr(v).
TEST(OptimizerTest, ServerFollowsTheSchedule) {
  auto spec = Spec("sgd");
  spec.momentum = 0;
  spec.weight_decay = 0;
  spec.lr = 1;
  spec.lr_schedule = "step:2:0.5";
  auto params = std::vector<at::Tensor>{torch::zeros({1}).requires_grad_()};
  testing::Shard ps(spec, params);
  const float expected[] = {-1, -2, -2.5, -3, -3.25};
  for (int v = 0; v < 5; ++v) {
    ps.grad_buffer(0)[0].fill_(1);
    ASSERT_TRUE(ps.Push(0, v).ok());
    EXPECT_EQ(params[0].item<float>(), expected[v]) << v;
  }
}

TEST(OptimizerTest, StalenessScales) {
  auto none = ParseStalenessLr("none");
  auto inverse = ParseStalenessLr("inverse");
  auto linear = ParseStalenessLr("linear:0.5");
  ASSERT_TRUE(none.ok() && inverse.ok() && linear.ok());
  EXPECT_EQ(StalenessScale(*none, 7), 1.0);
  EXPECT_EQ(StalenessScale(*inverse, 0), 1.0);
  EXPECT_EQ(StalenessScale(*inverse, 1), 1.0);
  EXPECT_EQ(StalenessScale(*inverse, 4), 0.25);
  EXPECT_EQ(StalenessScale(*linear, 0), 1.0);
  EXPECT_EQ(StalenessScale(*linear, 2), 0.5);
  for (const auto& bad : {"", "inv", "linear:", "linear:-1", "linear:1x"}) {
    EXPECT_FALSE(ParseStalenessLr(bad).ok()) << bad;
  }
}

// With --staleness_lr inverse, a push computed on version 0 and applied at
// version 4 moves the parameters by lr/4 * grad (sgd without momentum); the
// histogram records each push's staleness.
TEST(OptimizerTest, StalePushStepIsScaledAndCounted) {
  auto spec = Spec("sgd");
  spec.momentum = 0;
  spec.weight_decay = 0;
  spec.lr = 0.5;
  spec.staleness_lr = "inverse";
  spec.async_lr = "per_push";
  spec.world_size = 3;  // two workers
  auto params = std::vector<at::Tensor>{torch::zeros({2}).requires_grad_()};
  testing::Shard ps(spec, params);
  ASSERT_EQ(ps.staleness_histogram().size(), UpdateRule::kMaxStaleness + 1);
  for (int v = 0; v < 4; ++v) {  // worker 0, always fresh: versions 1..4
    ps.grad_buffer(0)[0].zero_();
    ASSERT_TRUE(ps.Push(0, v).ok());
  }
  ps.grad_buffer(1)[0].fill_(2);
  ASSERT_TRUE(ps.Push(1, 0).ok());  // staleness 4
  EXPECT_EQ(ps.version(), 5u);
  EXPECT_EQ(params[0][0].item<float>(), -0.5f / 4 * 2);
  ps.grad_buffer(1)[0].zero_();
  ASSERT_TRUE(ps.Push(1, 0).ok());     // staleness 5
  ASSERT_TRUE(ps.Push(1, 1000).ok());  // from the future: counted as 0
  for (uint64_t v = 7; v < 77; ++v)
    ASSERT_TRUE(ps.Push(0, v).ok());  // fresh, zero grads
  ps.grad_buffer(1)[0].fill_(1);
  ASSERT_TRUE(ps.Push(1, 1).ok());  // staleness 76: the last bucket
  EXPECT_NEAR(params[0][0].item<float>(), -0.25f - 0.5f / 76, 1e-7);
  const auto& h = ps.staleness_histogram();
  EXPECT_EQ(h[0], 75u);
  EXPECT_EQ(h[4], 1u);
  EXPECT_EQ(h[5], 1u);
  EXPECT_EQ(h[UpdateRule::kMaxStaleness], 1u);
  uint64_t total = 0;
  for (auto n : h)
    total += n;
  EXPECT_EQ(total, ps.pushes());
}

TEST(OptimizerTest, SspAppliesEachPushLikeAsync) {
  auto spec = Spec("sgd");
  spec.mode = Mode::kSsp;
  spec.momentum = 0;
  spec.weight_decay = 0;
  auto params = std::vector<at::Tensor>{torch::zeros({1}).requires_grad_()};
  testing::Shard ps(spec, params);
  ps.grad_buffer(0)[0].fill_(1);
  auto r = ps.Push(0, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r);
  EXPECT_EQ(ps.version(), 1u);
  EXPECT_FLOAT_EQ(params[0].item<float>(), -0.1f);
  EXPECT_EQ(ps.staleness_histogram()[0], 1u);
}

}  // namespace
}  // namespace pstrain::ps
