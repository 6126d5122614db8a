// A worker's row-sparse push_pull against a real Service on loopback: two
// workers push the rows their batches touched and ask for those of their
// next batches; the server's sync step equals the dense one, and each
// worker's table gets the rows it asked for, of the new version, and no
// others. Then the same with a pull: whole tables. With --compression
// and --pull_compression fp16 or bf16 the rows travel coded both ways
// (ps::PushRowsCodecOf), and the same holds of the decoded values.

#include <future>
#include <sstream>
#include <thread>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <gtest/gtest.h>
#include <torch/optim/optimizer.h>
#include <torch/torch.h>

#include "ps/job/compression_spec.h"
#include "ps/job/optimizer.h"
#include "ps/job/tensor_codec.h"
#include "ps/service/service.h"
#include "ps/store/parameter_server.h"
#include "wire/compression.h"
#include "worker/ps_client.h"

namespace pstrain::worker {
namespace {

constexpr int64_t kRows = 30, kDim = 4;

// `codec`: --compression and --pull_compression.
ps::JobSpec Spec(const std::string& codec) {
  ps::JobSpec s;
  s.mode = ps::Mode::kSync;
  s.optimizer = "adagrad";
  s.lr = 0.5;
  s.world_size = 3;  // two workers
  s.compression = s.pull_compression = codec;
  return s;
}

// What `t` is once it has travelled in `codec`.
at::Tensor Rounded(wire::Codec codec, const at::Tensor& t) {
  const at::Tensor x = t.contiguous();
  const size_t n = static_cast<size_t>(x.numel());
  std::vector<uint8_t> record(wire::CompressedBytes(codec, {}, n));
  wire::Encode(codec, {}, x.data_ptr<float>(), n, 0, record.data());
  at::Tensor out = torch::zeros_like(x);
  wire::DecodeAdd(codec, {}, record.data(), record.size(), n, 1.0f,
                  out.data_ptr<float>());
  return out;
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

// A sync server whose key 0 is row-sparse, on its own thread; the
// parameter is the job's codec.
class SparseClientTest : public ::testing::TestWithParam<std::string> {
 protected:
  SparseClientTest()
      : params_(Leaves(Init())),
        keys_({ps::KeySpecOf("emb.weight", params_[0]),
               ps::KeySpecOf("bias", params_[1])}),
        core_(Spec(GetParam()), params_, {true, false}),
        log_(Quiet()),
        service_(&io_, Spec(GetParam()), keys_, &core_, &log_, Options()) {
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

// The codecs are the rule's, as ServerGroup sets them.
struct Worker {
  PsClient client{std::chrono::milliseconds(10000), {}};
  std::vector<at::Tensor> params, grads;
  std::vector<SparseSlot> slots{1};
  Worker(int port, int rank, const std::vector<wire::KeySpec>& keys,
         const ps::CompressionSpec& c) {
    EXPECT_TRUE(client.Connect("127.0.0.1", port).ok());
    EXPECT_TRUE(client.Handshake(rank, 3).ok());
    EXPECT_TRUE(client.Register(keys).ok());
    params = {torch::zeros({kRows, kDim}), torch::zeros({3})};
    grads = {torch::zeros({kRows, kDim}), torch::zeros({3})};
    client.Attach(params, grads);
    slots[0].key = 0;
    slots[0].push_codec = ps::PushRowsCodecOf(c, params[0]);
    slots[0].pull_codec = ps::PullRowsCodecOf(c, params[0]);
    client.SetSparse(&slots);
  }
  // Rows `ids` of gradient `dense`, asking for `want`.
  void Plan(const at::Tensor& dense, std::vector<int64_t> ids,
            std::vector<int64_t> want) {
    SparseSlot& slot = slots[0];
    slot.push_rows = dense.index_select(0, torch::tensor(ids));
    slot.push_ids = std::move(ids);
    slot.want_ids = std::move(want);
    if (slot.push_codec != wire::Codec::kRaw) {
      const size_t n = static_cast<size_t>(slot.push_rows.numel());
      slot.push_record.resize(wire::CompressedBytes(slot.push_codec, {}, n));
      wire::Encode(slot.push_codec, {}, slot.push_rows.data_ptr<float>(), n, 0,
                   slot.push_record.data());
    }
  }
};

TEST_P(SparseClientTest, SyncRowsEqualDenseAndTheReplyBringsTheAskedRows) {
  auto c = ps::CompressionOf(Spec(GetParam()));
  ASSERT_TRUE(c.ok());
  const wire::Codec codec = c->push;  // the rows' both ways
  Worker a(service_.port(), 1, keys_, *c), b(service_.port(), 2, keys_, *c);
  EXPECT_EQ(a.slots[0].push_codec, codec);
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
  auto opt = ps::MakeOptimizer(Spec(GetParam()), dense);
  dense[0].mutable_grad() = (Rounded(codec, ga) + Rounded(codec, gb)) / 2;
  dense[1].mutable_grad() = torch::full({3}, 2.0f);
  opt->step();
  EXPECT_TRUE(params_[0].detach().equal(dense[0].detach()));
  // a's table: rows 2, 7, 11 of the new version; the others as pulled.
  at::Tensor want = Init()[0];
  for (int64_t r : {2, 7, 11})
    want[r] = Rounded(codec, dense[0].detach()[r]);
  EXPECT_TRUE(a.params[0].equal(want));
  EXPECT_TRUE(a.params[1].equal(dense[1].detach()));
  // b asked for none: its table is as pulled.
  EXPECT_TRUE(b.params[0].equal(Init()[0]));
}

INSTANTIATE_TEST_SUITE_P(Codecs, SparseClientTest,
                         ::testing::Values("none", "fp16", "bf16"));

}  // namespace
}  // namespace pstrain::worker
