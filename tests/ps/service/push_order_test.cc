// A push may carry its keys in any order (workers send gradients in the
// order backward makes them): a real Service on loopback reduces by key
// whatever the order of each worker, and refuses a push that names a key
// twice.

#include <future>
#include <sstream>
#include <thread>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "net/client.h"
#include "ps/job/tensor_codec.h"
#include "ps/service/service.h"
#include "ps/store/parameter_server.h"
#include "worker/ps_client.h"

namespace pstrain::ps {
namespace {

JobSpec Spec() {
  JobSpec s;
  s.mode = Mode::kSync;
  s.lr = 0.5;
  s.momentum = 0;
  s.world_size = 3;  // two workers
  return s;
}

// A sync server of three keys, on its own thread, until the test ends.
class OrderTest : public ::testing::Test {
 protected:
  OrderTest()
      : params_({torch::zeros({600, 500}).requires_grad_(),
                 torch::zeros({500}).requires_grad_(),
                 torch::zeros({7}).requires_grad_()}),
        keys_({KeySpecOf("a", params_[0]), KeySpecOf("b", params_[1]),
               KeySpecOf("c", params_[2])}),
        core_(Spec(), params_),
        log_(Quiet()),
        service_(&io_, Spec(), keys_, &core_, &log_, Options()) {
    EXPECT_TRUE(service_.Listen().ok());
    thread_ = std::thread([this] { (void)service_.Run(); });
  }
  ~OrderTest() override {
    asio::post(io_, [this] { io_.stop(); });
    thread_.join();
  }
  report::EventLogOptions Quiet() {
    report::EventLogOptions o;
    o.quiet = true;
    o.err = o.out = &sink_;
    return o;
  }
  static ServiceOptions Options() {
    ServiceOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    return o;
  }

  std::vector<at::Tensor> params_;
  std::vector<wire::KeySpec> keys_;
  ParameterServer core_;
  std::ostringstream sink_;
  report::EventLog log_;
  asio::io_context io_;
  Service service_;
  std::thread thread_;
};

// A worker of rank `rank` whose gradients are all `g`.
struct Worker {
  worker::PsClient client{std::chrono::milliseconds(10000), {}};
  std::vector<at::Tensor> params, grads;
  Worker(int port, int rank, const std::vector<wire::KeySpec>& keys,
         const std::vector<at::Tensor>& like, float g) {
    EXPECT_TRUE(client.Connect("127.0.0.1", port).ok());
    EXPECT_TRUE(client.Handshake(rank, 3).ok());
    EXPECT_TRUE(client.Register(keys).ok());
    for (const auto& p : like) {
      params.push_back(torch::zeros_like(p).detach());
      grads.push_back(torch::full_like(p, g).detach());
    }
    client.Attach(params, grads);
  }
};

TEST_F(OrderTest, WorkersInDifferentKeyOrdersReduceByKey) {
  Worker reverse(service_.port(), 1, keys_, params_, 1.0f);
  Worker forward(service_.port(), 2, keys_, params_, 3.0f);
  reverse.client.SetSendGate(nullptr, {3, 2, 1});  // keys c, b, a
  for (int step = 0; step < 2; ++step) {
    auto other = std::async(std::launch::async,
                            [&] { return forward.client.PushPull(step); });
    auto v = reverse.client.PushPull(step);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_TRUE(other.get().ok());
    EXPECT_EQ(*v, static_cast<uint64_t>(step + 1));
    // Each step: p -= 0.5 * mean(1, 3), on every key.
    for (size_t k = 0; k < params_.size(); ++k) {
      EXPECT_TRUE(reverse.params[k].equal(
          torch::full_like(params_[k], -1.0f * (step + 1))))
          << "key " << k << " step " << step;
      EXPECT_TRUE(forward.params[k].equal(reverse.params[k])) << "key " << k;
    }
  }
}

TEST_F(OrderTest, AKeyNamedTwiceIsRefused) {
  Worker good(service_.port(), 1, keys_, params_, 1.0f);  // takes rank 1
  net::Client raw;
  ASSERT_TRUE(
      raw.Connect("127.0.0.1", service_.port(), std::chrono::milliseconds(2000))
          .ok());
  std::string meta;
  std::vector<at::Tensor> data;  // the bytes the descriptors announce
  auto call = [&](wire::MsgType type) {
    net::FrameBuffers& f = raw.NewRequest();
    f.Reset(type, 0, meta);
    for (const at::Tensor& t : data)
      f.AddData(t.data_ptr(), t.nbytes());
    wire::MsgType reply;
    return raw.Call(f, nullptr, std::chrono::milliseconds(5000), &reply);
  };
  wire::EncodeMeta(wire::Hello{wire::Role::kWorker, 2, 3}, &meta);
  ASSERT_TRUE(call(wire::MsgType::kHello).ok());
  wire::EncodeMeta(wire::Register{keys_}, &meta);
  ASSERT_TRUE(call(wire::MsgType::kRegister).ok());
  wire::PushPull push;
  push.version = 0;
  // Small keys: the refusal comes before the data is read, and a write of
  // megabytes could then meet the closed socket before the reply is read.
  for (int k : {1, 2, 1}) {
    push.grads.push_back(DescribeTensor(k, params_[k]));
    data.push_back(torch::zeros_like(params_[k]));
  }
  wire::EncodeMeta(push, &meta);
  Status s = call(wire::MsgType::kPushPull);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_EQ(s.message(),
            "push_pull: tensor 2 is key 1, which an earlier tensor was");
}

}  // namespace
}  // namespace pstrain::ps
