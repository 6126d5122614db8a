// GradStream on real autograd: the gate opens a key only once backward has
// finished that key's gradient, opens keys before backward ends, and learns
// the order backward really shows.

#include "worker/grad_stream.h"

#include <map>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pstrain::worker {
namespace {

// Four keys: l1.weight, l1.bias, l2.weight, l2.bias.
struct TwoLayers {
  torch::nn::Sequential net{torch::nn::Linear(64, 256), torch::nn::ReLU(),
                            torch::nn::Linear(256, 10)};
  std::vector<at::Tensor> params = net->parameters();
  TwoLayers() {
    torch::manual_seed(3);
    for (auto& p : params)
      p.mutable_grad() = torch::zeros_like(p);
  }
  at::Tensor Loss() {
    return net->forward(torch::randn({32, 64})).pow(2).sum();
  }
};

TEST(GradStreamTest, OpensAKeyOnlyOnceItsGradientIsFinal) {
  TwoLayers model;
  GradStream stream(model.params, /*hook=*/true);
  // What each key's gradient held when the gate first opened it, and the
  // gate's mark then, seen from the watcher (on backward's thread).
  std::map<int, at::Tensor> at_open;
  std::map<int, uint32_t> open_when_seen;
  const int watch = stream.gate()->Watch([&] {
    const uint32_t open = stream.gate()->open();
    for (size_t k = 0; k < model.params.size(); ++k) {
      if (stream.marks()[k] <= open && !at_open.count(k)) {
        at_open[k] = model.params[k].grad().clone();
        open_when_seen[k] = open;
      }
    }
  });
  for (int step = 0; step < 2; ++step) {
    at_open.clear();
    model.net->zero_grad(/*set_to_none=*/false);
    auto loss = model.Loss();
    stream.Begin();
    EXPECT_EQ(stream.gate()->open(), 0u);
    loss.backward();
    EXPECT_FALSE(stream.End())
        << "a sequential net's order is reverse key order";
    ASSERT_EQ(at_open.size(), model.params.size());
    for (size_t k = 0; k < model.params.size(); ++k) {
      EXPECT_TRUE(at_open[k].equal(model.params[k].grad())) << "key " << k;
      EXPECT_NE(model.params[k].grad().abs().sum().item<float>(), 0.0f);
    }
    // The output layer's keys went while backward still had work to do.
    EXPECT_LT(open_when_seen[3], model.params.size());
    EXPECT_LT(open_when_seen[2], model.params.size());
  }
  stream.gate()->Unwatch(watch);
}

TEST(GradStreamTest, LearnsTheOrderBackwardShows) {
  // Key 0 is used last in forward, so backward finishes it first: the
  // opposite of the first guess.
  auto a = torch::full({8}, 2.0).requires_grad_();
  auto b = torch::full({8}, 3.0).requires_grad_();
  a.mutable_grad() = torch::zeros_like(a);
  b.mutable_grad() = torch::zeros_like(b);
  GradStream stream({a, b}, /*hook=*/true);
  EXPECT_EQ(stream.marks(), (std::vector<uint32_t>{2, 1}));
  for (int step = 0; step < 3; ++step) {
    stream.Begin();
    auto x = torch::ones({8});
    ((x * b).exp() * a).sum().backward();
    EXPECT_EQ(stream.End(), step == 0) << "step " << step;
    EXPECT_EQ(stream.marks(), (std::vector<uint32_t>{1, 2})) << "step " << step;
    EXPECT_EQ(stream.gate()->open(), net::SendGate::kAll);
  }
}

TEST(GradStreamTest, WithoutHooksTheGateOpensAtTheEnd) {
  TwoLayers model;
  GradStream stream(model.params, /*hook=*/false);
  stream.Begin();
  model.Loss().backward();
  EXPECT_EQ(stream.gate()->open(), 0u);
  EXPECT_FALSE(stream.End());
  EXPECT_EQ(stream.gate()->open(), net::SendGate::kAll);
}

TEST(GradStreamTest, AbortLeavesTheGateClosedAndAborted) {
  TwoLayers model;
  GradStream stream(model.params, /*hook=*/true);
  stream.Begin();
  stream.Abort();
  EXPECT_TRUE(stream.gate()->aborted());
  stream.Begin();
  EXPECT_FALSE(stream.gate()->aborted());
}

// A BatchNorm's buffers are keys too: forward has written them, so they
// are ready when backward starts, and the gate opens the prefix of the
// expected order up to the first parameter whose gradient is not final.
TEST(GradStreamTest, BuffersAreReadyAtBegin) {
  torch::manual_seed(3);
  torch::nn::Sequential net{torch::nn::Linear(8, 4), torch::nn::BatchNorm1d(4)};
  // Keys, state_dict order: 0.weight, 0.bias, 1.weight, 1.bias,
  // 1.running_mean, 1.running_var, 1.num_batches_tracked.
  std::vector<at::Tensor> keys;
  for (const auto& p : net[0]->parameters())
    keys.push_back(p);
  for (const auto& p : net[1]->parameters())
    keys.push_back(p);
  for (const auto& b : net[1]->buffers())
    keys.push_back(b);
  ASSERT_EQ(keys.size(), 7u);
  for (auto& k : keys) {
    if (k.requires_grad())
      k.mutable_grad() = torch::zeros_like(k);
  }
  GradStream stream(keys, /*hook=*/true);
  // The expected order at first is reverse key order: the three buffers
  // lead it.
  auto loss = net->forward(torch::randn({16, 8})).pow(2).sum();
  stream.Begin();
  EXPECT_EQ(stream.gate()->open(), 3u);
  loss.backward();
  // Backward showed the buffers first, then the parameters: a new order.
  EXPECT_TRUE(stream.End());
  EXPECT_EQ(stream.gate()->open(), net::SendGate::kAll);
  for (int k = 4; k < 7; ++k)
    EXPECT_LE(stream.marks()[k], 3u) << "buffer key " << k;
}

}  // namespace
}  // namespace pstrain::worker
