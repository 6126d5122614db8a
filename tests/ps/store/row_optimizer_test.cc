// RowOptimizer against libtorch's dense optimizers: sgd (no momentum) and
// adagrad give exactly their result on a gradient that is zero outside
// the touched rows; lazy momentum and LazyAdam leave untouched rows, and
// their state, alone; the state survives save and load.

#include "ps/store/row_optimizer.h"

#include <sstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/job/optimizer.h"
#include "ps/job/sparse_keys.h"
#include "ps/store/checkpoint.h"
#include "ps/store/parameter_server.h"
#include "testing/idx_files.h"

namespace pstrain::ps {
namespace {

constexpr int64_t kRows = 12, kDim = 8;

JobSpec Spec(const std::string& optimizer, double momentum = 0) {
  JobSpec s;
  s.optimizer = optimizer;
  s.lr = 0.1;
  s.momentum = momentum;
  s.world_size = 2;
  return s;
}

// Steps t = 0..4 touch rows {t, t + 3, 9} (row 9 every step, rows 8, 10
// and 11 never), with gradients drawn from a fixed seed.
struct Steps {
  std::vector<at::Tensor> ids, grads;
  Steps() {
    torch::manual_seed(3);
    for (int64_t t = 0; t < 5; ++t) {
      ids.push_back(torch::tensor({t, t + 3, int64_t{9}}));
      grads.push_back(torch::randn({3, kDim}));
    }
  }
  at::Tensor Dense(size_t t) const {
    return torch::zeros({kRows, kDim}).index_add_(0, ids[t], grads[t]);
  }
};

at::Tensor Table() {
  torch::manual_seed(1);
  return torch::randn({kRows, kDim}).requires_grad_();
}

// The dense optimizer's result and the row optimizer's, on the same steps.
std::pair<at::Tensor, at::Tensor> RunBoth(const JobSpec& spec) {
  const Steps steps;
  at::Tensor dense = Table();
  at::Tensor rows = Table();
  auto opt = MakeOptimizer(spec, {dense});
  RowOptimizer row_opt(spec, rows);
  for (size_t t = 0; t < steps.ids.size(); ++t) {
    dense.mutable_grad() = steps.Dense(t);
    opt->step();
    row_opt.SetGradient(steps.ids[t], steps.grads[t]);
    row_opt.step();
  }
  return {dense.detach(), rows.detach()};
}

TEST(RowOptimizerTest, SgdIsExactlyTheDenseResult) {
  auto [dense, rows] = RunBoth(Spec("sgd"));
  EXPECT_TRUE(torch::equal(dense, rows)) << (dense - rows).abs().max();
  EXPECT_TRUE(torch::equal(rows.slice(0, 10), Table().detach().slice(0, 10)));
}

TEST(RowOptimizerTest, AdagradIsExactlyTheDenseResult) {
  auto [dense, rows] = RunBoth(Spec("adagrad"));
  EXPECT_TRUE(torch::equal(dense, rows)) << (dense - rows).abs().max();
}

TEST(RowOptimizerTest, LazyMomentumMovesOnlyTouchedRows) {
  const JobSpec spec = Spec("sgd", 0.9);
  at::Tensor table = Table();
  const at::Tensor before = table.detach().clone();
  RowOptimizer opt(spec, table);
  const at::Tensor g = torch::ones({1, kDim});
  opt.SetGradient(torch::tensor({int64_t{2}}), g);
  opt.step();
  // Row 2's buffer is g: it moved by lr * g; a step on row 5 alone leaves
  // row 2 where it is (dense momentum would move it by lr * 0.9 * g).
  EXPECT_TRUE(torch::allclose(table.detach()[2], before[2] - 0.1));
  opt.SetGradient(torch::tensor({int64_t{5}}), g);
  opt.step();
  EXPECT_TRUE(torch::allclose(table.detach()[2], before[2] - 0.1));
  opt.SetGradient(torch::tensor({int64_t{2}}), g);
  opt.step();  // buf = 0.9 * g + g
  EXPECT_TRUE(torch::allclose(table.detach()[2], before[2] - 0.1 - 0.19));
}

TEST(RowOptimizerTest, LazyAdamMovesOnlyTouchedRowsAndTheirMoments) {
  JobSpec spec = Spec("adam");
  at::Tensor table = Table();
  const at::Tensor before = table.detach().clone();
  RowOptimizer opt(spec, table);
  const Steps steps;
  for (size_t t = 0; t < steps.ids.size(); ++t) {
    opt.SetGradient(steps.ids[t], steps.grads[t]);
    opt.step();
  }
  EXPECT_FALSE(
      torch::equal(table.detach().slice(0, 0, 10), before.slice(0, 0, 10)));
  EXPECT_TRUE(
      torch::equal(table.detach().slice(0, 10, 12), before.slice(0, 10, 12)));
  const auto& state = opt.state_tensors();
  ASSERT_EQ(state.size(), 3u);
  EXPECT_EQ(state[2].first, "step");
  EXPECT_EQ(state[2].second[9].item<int64_t>(), 5);  // every step
  EXPECT_EQ(state[2].second[0].item<int64_t>(), 1);
  EXPECT_EQ(state[2].second[10].item<int64_t>(), 0);
  EXPECT_EQ(state[0].second[10].abs().sum().item<float>(), 0.f);
  // A row's first step is Adam's first step: lr * sign(g), whatever the
  // table's step count.
  at::Tensor fresh = Table();
  RowOptimizer first(spec, fresh);
  first.SetGradient(torch::tensor({int64_t{10}}), torch::full({1, kDim}, 3.f));
  first.step();
  EXPECT_TRUE(torch::allclose(fresh.detach()[10], Table().detach()[10] - 0.1,
                              1e-5, 1e-6));
}

TEST(RowOptimizerTest, StateSurvivesSaveAndLoad) {
  const JobSpec spec = Spec("adagrad");
  at::Tensor a = Table();
  RowOptimizer opt(spec, a);
  const Steps steps;
  opt.SetGradient(steps.ids[0], steps.grads[0]);
  opt.step();
  std::ostringstream bytes;
  torch::serialize::OutputArchive out;
  opt.save(out);
  out.save_to(bytes);
  at::Tensor b = Table();
  RowOptimizer again(spec, b);
  std::istringstream in(bytes.str());
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  again.load(archive);
  EXPECT_TRUE(torch::equal(again.state_tensors()[0].second,
                           opt.state_tensors()[0].second));
  // Another optimizer's state is refused.
  at::Tensor c = Table();
  RowOptimizer adam(Spec("adam"), c);
  std::istringstream in2(bytes.str());
  torch::serialize::InputArchive archive2;
  archive2.load_from(in2);
  EXPECT_THROW(adam.load(archive2), c10::Error);
}

// A server's row-sparse keys save their state in the optimizer-state
// file beside libtorch's, and a resumed server reads it back.
TEST(RowOptimizerTest, AServersRowStateIsInItsCheckpoint) {
  data::testing::ScratchDir dir;
  const std::string path = dir.File("model.pt");
  JobSpec spec = Spec("adam");
  ParameterServer a(spec, {Table(), torch::zeros({3}).requires_grad_()},
                    {true, false});
  ASSERT_EQ(a.optimizers().size(), 2u);  // libtorch's Adam, the table's
  auto* rows = dynamic_cast<RowOptimizer*>(a.optimizers()[1]);
  ASSERT_NE(rows, nullptr);
  const Steps steps;
  rows->SetGradient(steps.ids[0], steps.grads[0]);
  rows->step();
  ASSERT_TRUE(SaveOptimizerState(path, a.optimizers()).ok());
  ParameterServer b(spec, {Table(), torch::zeros({3}).requires_grad_()},
                    {true, false});
  ASSERT_TRUE(LoadOptimizerState(path, b.optimizers()).ok());
  auto* again = dynamic_cast<RowOptimizer*>(b.optimizers()[1]);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(torch::equal(again->state_tensors()[i].second,
                             rows->state_tensors()[i].second))
        << rows->state_tensors()[i].first;
  }
}

TEST(RowOptimizerTest, SupportsSgdAdagradAdamWithoutWeightDecay) {
  EXPECT_TRUE(HasLazyRows(Spec("sgd", 0.9)));
  EXPECT_TRUE(HasLazyRows(Spec("adagrad")));
  EXPECT_TRUE(HasLazyRows(Spec("adam")));
  EXPECT_FALSE(HasLazyRows(Spec("rmsprop")));
  EXPECT_FALSE(HasLazyRows(Spec("adamw")));
  JobSpec decay = Spec("sgd");
  decay.weight_decay = 0.01;
  EXPECT_FALSE(HasLazyRows(decay));
}

}  // namespace
}  // namespace pstrain::ps
