#include "ps/rules/lookahead.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/job/optimizer.h"
#include "ps/store/parameter_server.h"
#include "testing/shard.h"

namespace pstrain::ps {
namespace {

JobSpec Spec() {
  JobSpec spec;
  spec.mode = Mode::kAsync;
  spec.world_size = 4;  // three workers: two pushes land in between
  spec.momentum = 0.5;
  spec.lr = 1;
  spec.lr_schedule = "constant";
  spec.async_lr = "per_push";
  spec.async_momentum = "lookahead";
  return spec;
}

TEST(LookaheadTest, FactorSumsTheMomentumOfTheOtherWorkersPushes) {
  auto p = torch::zeros({1});
  // mu + mu^2 for two pushes in between.
  EXPECT_DOUBLE_EQ(Lookahead(0.5, {p}, {true}, 3).factor(), 0.75);
  EXPECT_DOUBLE_EQ(Lookahead(0.9, {p}, {true}, 1).factor(), 0.0);
  EXPECT_EQ(Lookahead(0.5, {p}, {true}, 3).bytes_per_worker(), 4u);
}

// sgd, momentum 0.5, lr 1: a push of gradient 1 leaves v = 1 and w = -1;
// a worker is then sent w - 1 * 0.75 * v, and the server's w stays -1.
TEST(LookaheadTest, AWorkerIsSentWhereMomentumCarriesTheParameters) {
  auto params = std::vector<at::Tensor>{torch::zeros({2}).requires_grad_(),
                                        torch::ones({1})};  // a buffer
  testing::Shard ps(Spec(), params);
  ps.NoteParamsSent(1);  // no step yet: no momentum, sent as they are
  EXPECT_TRUE(torch::equal(ps.SentParam(1, 0), torch::zeros({2})));
  ps.grad_buffer(0)[0].fill_(1);
  ps.grad_buffer(0)[1].fill_(3);
  ASSERT_TRUE(ps.Push(0, 0).ok());
  ps.NoteParamsSent(0);
  EXPECT_TRUE(torch::allclose(ps.SentParam(0, 0), torch::full({2}, -1.75f)))
      << ps.SentParam(0, 0);
  EXPECT_TRUE(torch::equal(params[0].detach(), torch::full({2}, -1.0f)));
  EXPECT_EQ(ps.SentParam(0, 1).item<float>(), 3.0f);  // buffers as they are
  // Worker 1's copy is the one it was sent until it is sent again.
  EXPECT_TRUE(torch::equal(ps.SentParam(1, 0), torch::zeros({2})));
}

// The default looks ahead wherever lookahead applies, and keeps
// --momentum elsewhere, where an explicit lookahead is refused.
TEST(LookaheadTest, TheDefaultLooksAheadWhereItApplies) {
  JobSpec spec = Spec();
  spec.async_momentum = JobSpec().async_momentum;
  EXPECT_EQ(spec.async_momentum, "lookahead_or_keep");
  EXPECT_TRUE(UsesLookahead(spec));
  spec.mode = Mode::kSsp;
  EXPECT_TRUE(UsesLookahead(spec));
  for (auto change : std::vector<void (*)(JobSpec*)>{
           [](JobSpec* s) { s->mode = Mode::kSync; },
           [](JobSpec* s) { s->optimizer = "adam"; },
           [](JobSpec* s) { s->momentum = 0; },
           [](JobSpec* s) { s->pull_compression = "fp16"; },
           [](JobSpec* s) { s->placement = "server"; },
           [](JobSpec* s) { s->async_momentum = "keep"; },
       }) {
    JobSpec other = Spec();
    other.async_momentum = "lookahead_or_keep";
    change(&other);
    EXPECT_FALSE(UsesLookahead(other));
    EXPECT_TRUE(ValidateJobSpec(other).ok())
        << ValidateJobSpec(other).message();
    EXPECT_EQ(*AsyncMomentum(other), other.momentum);
  }
}

TEST(LookaheadTest, NeedsSgdWithMomentum) {
  JobSpec spec = Spec();
  spec.optimizer = "adam";
  EXPECT_EQ(ValidateJobSpec(spec).message(),
            "--async_momentum lookahead: needs --optimizer sgd, 0 < --momentum "
            "< 1 and --pull_compression none");
  spec = Spec();
  spec.mode = Mode::kSync;  // nothing to look ahead of
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
}

}  // namespace
}  // namespace pstrain::ps
