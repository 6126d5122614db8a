// BatchCompute, the model on the server: each result is the gradient one
// process computes on the server's parameters as they are, replicas read
// the server's memory itself, and a batch the model cannot take fails
// with its shapes named.

#include "ps/service/batch_compute.h"

#include <condition_variable>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model_state.h"
#include "models/model_zoo.h"

namespace pstrain::ps {
namespace {

std::shared_ptr<models::Model> Mlp(uint64_t seed) {
  torch::manual_seed(seed);
  auto model = models::MakeModel("mlp");
  EXPECT_TRUE(model.ok());
  return *model;
}

// Results as they come from the compute threads, copied.
class Results {
 public:
  void Add(const BatchResult& r) {
    std::lock_guard<std::mutex> lock(mu_);
    Got got{r.worker, r.status, r.loss, {}};
    if (r.status.ok()) {
      for (const auto& k : *r.keys)
        got.keys.push_back(k.clone());
    }
    got_.push_back(std::move(got));
    cv_.notify_all();
  }
  struct Got {
    int worker;
    Status status;
    double loss;
    std::vector<at::Tensor> keys;
  };
  Got Next() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return taken_ < got_.size(); });
    return got_[taken_++];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Got> got_;
  size_t taken_ = 0;
};

struct Fixture {
  Fixture() {
    server = Mlp(1);
    keys = models::StateValues(*server);
    BatchComputeOptions o;
    o.replicas = 2;
    auto made = BatchCompute::Make(
        keys, [] { return Result<std::shared_ptr<models::Model>>(Mlp(9)); }, o,
        [this](const BatchResult& r) { results.Add(r); });
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    compute = std::move(*made);
  }
  // What one process computes on the server's model: nll's gradients.
  std::vector<at::Tensor> Expected(const at::Tensor& x, const at::Tensor& y) {
    server->zero_grad();
    torch::nll_loss(server->forward(x), y).backward();
    std::vector<at::Tensor> grads;
    for (const auto& k : keys)
      grads.push_back(k.grad().clone());
    return grads;
  }
  void Run(int worker, const at::Tensor& x, const at::Tensor& y) {
    BatchJob job;
    job.worker = worker;
    job.x = x;
    job.y = y;
    compute->Run(job);
  }

  std::shared_ptr<models::Model> server;
  std::vector<at::Tensor> keys;
  Results results;
  std::unique_ptr<BatchCompute> compute;  // joined first
};

at::Tensor Labels() {
  return torch::tensor({3, 1, 4, 1}, torch::kInt64);
}

TEST(BatchComputeTest, EachResultIsTheGradientOnTheServersParameters) {
  Fixture f;
  const at::Tensor x = torch::randn({4, 1, 28, 28});
  f.Run(1, x, Labels());
  const auto got = f.results.Next();
  ASSERT_TRUE(got.status.ok()) << got.status.ToString();
  EXPECT_EQ(got.worker, 1);
  const auto want = f.Expected(x, Labels());
  ASSERT_EQ(got.keys.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k)
    EXPECT_TRUE(torch::allclose(got.keys[k], want[k])) << "key " << k;
  EXPECT_NEAR(got.loss,
              torch::nll_loss(f.server->forward(x), Labels()).item<double>(),
              1e-6);
}

// Hogwild!'s sharing: what the server's optimizer writes, the next batch
// reads, with no copy.
TEST(BatchComputeTest, ReplicasReadTheServersMemory) {
  Fixture f;
  {
    torch::NoGradGuard no_grad;
    for (auto& k : f.keys)
      k.mul_(0.5);
  }
  const at::Tensor x = torch::randn({4, 1, 28, 28});
  f.Run(0, x, Labels());
  f.Run(1, x, Labels());
  const auto want = f.Expected(x, Labels());
  for (int i = 0; i < 2; ++i) {
    const auto got = f.results.Next();
    ASSERT_TRUE(got.status.ok());
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_TRUE(torch::allclose(got.keys[k], want[k])) << "key " << k;
  }
}

TEST(BatchComputeTest, ABatchTheModelCannotTakeNamesItsShapes) {
  Fixture f;
  f.Run(0, torch::randn({4, 7}), Labels());
  const auto got = f.results.Next();
  EXPECT_EQ(got.status.code(), StatusCode::kInvalidArgument);
  const std::string prefix =
      "push_batch: forward and backward on x [4, 7], y [4] failed: ";
  EXPECT_EQ(got.status.message().rfind(prefix, 0), 0u) << got.status.message();
  EXPECT_EQ(got.status.message().find('\n'), std::string::npos);
  // The replica goes on.
  f.Run(0, torch::randn({4, 1, 28, 28}), Labels());
  EXPECT_TRUE(f.results.Next().status.ok());
}

}  // namespace
}  // namespace pstrain::ps
