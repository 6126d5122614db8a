// A worker's row-sparse push_pull against a real Service on loopback: two
// workers push the rows their batches touched and ask for those of their
// next batches; the server's sync step equals the dense one, and each
// worker's table gets the rows it asked for, of the new version, and no
// others. Then the same with a pull: whole tables.

#include <future>
#include <sstream>
#include <thread>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <gtest/gtest.h>
#include <torch/optim/optimizer.h>
#include <torch/torch.h>

#include "ps/optimizer.h"
#include "ps/parameter_server.h"
#include "ps/service.h"
#include "ps/tensor_codec.h"
#include "worker/ps_client.h"

namespace pstrain::worker {
namespace {

constexpr int64_t kRows = 30, kDim = 4;

ps::JobSpec Spec() {
  ps::JobSpec s;
  s.mode = ps::Mode::kSync;
  s.optimizer = "adagrad";
  s.lr = 0.5;
  s.world_size = 3;  // two workers
  return s;
}

std::vector<at::Tensor> Init() {
  torch::manual_seed(4);
  return {torch::randn({kRows, kDim}), torch::randn({3})};
}

std::vector<at::Tensor> Leaves(const std::vector<at::Tensor>& init) {
  std::vector<at::Tensor> out;
  for (const auto& t : init)
    out.push_back(t.clone().requires_grad_());
  return out;
}

// A sync server whose key 0 is row-sparse, on its own thread.
class SparseClientTest : public ::testing::Test {
 protected:
  SparseClientTest()
      : params_(Leaves(Init())),
        keys_({ps::KeySpecOf("emb.weight", params_[0]),
               ps::KeySpecOf("bias", params_[1])}),
        core_(Spec(), params_, {true, false}),
        log_(Quiet()),
        service_(&io_, Spec(), keys_, &core_, &log_, Options()) {
    EXPECT_TRUE(service_.Listen().ok());
    thread_ = std::thread([this] { (void)service_.Run(); });
  }
  ~SparseClientTest() override {
    asio::post(io_, [this] { io_.stop(); });
    thread_.join();
  }
  report::EventLogOptions Quiet() {
    report::EventLogOptions o;
    o.quiet = true;
    o.err = o.out = &sink_;
    return o;
  }
  static ps::ServiceOptions Options() {
    ps::ServiceOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    return o;
  }

  std::vector<at::Tensor> params_;
  std::vector<wire::KeySpec> keys_;
  ps::ParameterServer core_;
  std::ostringstream sink_;
  report::EventLog log_;
  asio::io_context io_;
  ps::Service service_;
  std::thread thread_;
};

struct Worker {
  PsClient client{std::chrono::milliseconds(10000), {}};
  std::vector<at::Tensor> params, grads;
  std::vector<SparseSlot> slots{1};
  Worker(int port, int rank, const std::vector<wire::KeySpec>& keys) {
    EXPECT_TRUE(client.Connect("127.0.0.1", port).ok());
    EXPECT_TRUE(client.Handshake(rank, 3).ok());
    EXPECT_TRUE(client.Register(keys).ok());
    params = {torch::zeros({kRows, kDim}), torch::zeros({3})};
    grads = {torch::zeros({kRows, kDim}), torch::zeros({3})};
    client.Attach(params, grads);
    slots[0].key = 0;
    client.SetSparse(&slots);
  }
  // Rows `ids` of gradient `dense`, asking for `want`.
  void Plan(const at::Tensor& dense, std::vector<int64_t> ids,
            std::vector<int64_t> want) {
    slots[0].push_rows = dense.index_select(0, torch::tensor(ids));
    slots[0].push_ids = std::move(ids);
    slots[0].want_ids = std::move(want);
  }
};

TEST_F(SparseClientTest, SyncRowsEqualDenseAndTheReplyBringsTheAskedRows) {
  Worker a(service_.port(), 1, keys_), b(service_.port(), 2, keys_);
  ASSERT_TRUE(a.client.Pull(0).ok());
  ASSERT_TRUE(b.client.Pull(0).ok());
  EXPECT_TRUE(a.params[0].equal(Init()[0]));  // a pull: whole tables
  torch::manual_seed(9);
  const at::Tensor ga = torch::zeros({kRows, kDim}), gb = ga.clone();
  ga.index_put_({torch::tensor({1, 7, 20})}, torch::randn({3, kDim}));
  gb.index_put_({torch::tensor({7, 29})}, torch::randn({2, kDim}));
  a.grads[1].fill_(1);
  b.grads[1].fill_(3);
  a.Plan(ga, {1, 7, 20}, {2, 7, 11});
  b.Plan(gb, {7, 29}, {});
  auto other =
      std::async(std::launch::async, [&] { return b.client.PushPull(0); });
  auto v = a.client.PushPull(0);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_TRUE(other.get().ok());
  EXPECT_EQ(*v, 1u);
  // The server's step is dense adagrad on the mean gradient.
  std::vector<at::Tensor> dense = Leaves(Init());
  auto opt = ps::MakeOptimizer(Spec(), dense);
  dense[0].mutable_grad() = (ga + gb) / 2;
  dense[1].mutable_grad() = torch::full({3}, 2.0f);
  opt->step();
  EXPECT_TRUE(params_[0].detach().equal(dense[0].detach()));
  // a's table: rows 2, 7, 11 of the new version; the others as pulled.
  at::Tensor want = Init()[0];
  for (int64_t r : {2, 7, 11})
    want[r] = dense[0].detach()[r];
  EXPECT_TRUE(a.params[0].equal(want));
  EXPECT_TRUE(a.params[1].equal(dense[1].detach()));
  // b asked for none: its table is as pulled.
  EXPECT_TRUE(b.params[0].equal(Init()[0]));
}

}  // namespace
}  // namespace pstrain::worker
