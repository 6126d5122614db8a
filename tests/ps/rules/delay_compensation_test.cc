#include "ps/rules/delay_compensation.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/store/parameter_server.h"
#include "testing/shard.h"

namespace pstrain::ps {
namespace {

TEST(DelayCompensationTest, CorrectsAgainstWhatTheWorkerWasSent) {
  auto w = torch::tensor({1.0f, 2.0f});
  auto frozen = torch::tensor({5.0f});
  DelayCompensation dc(0.5, {w, frozen}, {true, false}, 2);
  EXPECT_EQ(dc.bytes_per_worker(), 8u);
  EXPECT_EQ(dc.bytes(), 24u);  // two workers' copies and the scratch

  // Nothing moved since the server sent it: no correction.
  auto g0 = torch::tensor({2.0f, -1.0f});
  auto f0 = torch::tensor({3.0f});
  dc.Correct(0, {g0, f0});
  EXPECT_TRUE(torch::equal(g0, torch::tensor({2.0f, -1.0f})));

  // The server moved by (0.5, -1) since worker 1 was sent w:
  // g + 0.5 * g * g * (w_now - w_sent).
  w.copy_(torch::tensor({1.5f, 1.0f}));
  auto g1 = torch::tensor({2.0f, -1.0f});
  auto f1 = torch::tensor({3.0f});
  dc.Correct(1, {g1, f1});
  EXPECT_TRUE(torch::equal(g1, torch::tensor({3.0f, -1.5f}))) << g1;
  EXPECT_EQ(f1.item<float>(), 3.0f);  // a key not compensated is left

  // Once sent the new values, worker 1's next gradient is fresh again.
  dc.NoteSent(1);
  auto g2 = torch::tensor({2.0f, -1.0f});
  dc.Correct(1, {g2, f1});
  EXPECT_TRUE(torch::equal(g2, torch::tensor({2.0f, -1.0f})));
}

// Through the server: worker 1 pushes a gradient computed on the initial
// parameters after worker 0's push moved them; sgd, lr 1, no momentum.
TEST(DelayCompensationTest, ServerStepsTheCorrectedGradient) {
  JobSpec spec;
  spec.mode = Mode::kAsync;
  spec.world_size = 3;
  spec.momentum = 0;
  spec.lr = 1;
  spec.lr_schedule = "constant";
  spec.async_lr = "per_push";
  spec.staleness_lr = "none";
  spec.delay_compensation = 0.25;
  auto params = std::vector<at::Tensor>{torch::zeros({2}).requires_grad_()};
  testing::Shard ps(spec, params);
  EXPECT_EQ(ps.delay_compensation_bytes_per_worker(), 8u);
  ps.NoteParamsSent(0);
  ps.NoteParamsSent(1);
  ps.grad_buffer(0)[0].copy_(torch::tensor({1.0f, 2.0f}));
  ASSERT_TRUE(ps.Push(0, 0).ok());  // w = (-1, -2), fresh: no correction
  EXPECT_TRUE(torch::equal(params[0].detach(), torch::tensor({-1.0f, -2.0f})));
  ps.NoteParamsSent(0);
  // g = (2, 2) on w_sent = 0: g + 0.25 * 4 * (-1, -2) = (1, 0).
  ps.grad_buffer(1)[0].copy_(torch::tensor({2.0f, 2.0f}));
  ASSERT_TRUE(ps.Push(1, 0).ok());
  EXPECT_TRUE(torch::equal(params[0].detach(), torch::tensor({-2.0f, -2.0f})))
      << params[0];

  spec.delay_compensation = 0;
  testing::Shard off(spec, params);
  EXPECT_EQ(off.delay_compensation_bytes_per_worker(), 0u);
}

}  // namespace
}  // namespace pstrain::ps
