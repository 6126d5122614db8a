// A worker that pushes NaN or Inf gradients: a real `pstrain serve` refuses
// each such push (counted, logged with the rank), the model never changes
// because of it, and the other workers finish. The bad worker is a PsClient
// in this process, so the test controls every byte it pushes.

#include <chrono>
#include <limits>

#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "job_test.h"
#include "models/model_zoo.h"
#include "ps/job/shard_plan.h"
#include "ps/job/tensor_codec.h"
#include "testing/idx_files.h"
#include "wire/frame_reader.h"
#include "worker/ps_client.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// A worker made of a PsClient: joins like `pstrain work`, then pushes
// whatever the test writes into grads.
class FakeWorker {
 public:
  void Join(int rank, int world_size, int port) {
    ASSERT_TRUE(client_.Connect("127.0.0.1", port).ok());
    auto spec = client_.Handshake(rank, world_size);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    torch::manual_seed(spec->seed);
    auto model = models::MakeModel(spec->model);
    ASSERT_TRUE(model.ok());
    ASSERT_TRUE(client_.Register(ps::Fingerprint(**model)).ok());
    for (const auto& p : (*model)->parameters()) {
      params.push_back(torch::zeros_like(p).detach());
      grads.push_back(torch::full_like(p, 0.01).detach());
    }
    // What the server holds: the plan's slices (sync slices large keys).
    auto plan = ps::PlanShardsOf(ps::Fingerprint(**model), *spec);
    ASSERT_TRUE(plan.ok());
    client_.Attach(ps::SliceViews(*plan, 0, params),
                   ps::SliceViews(*plan, 0, grads));
  }
  std::vector<torch::Tensor> Snapshot() const {
    std::vector<torch::Tensor> copy;
    for (const auto& p : params)
      copy.push_back(p.clone());
    return copy;
  }
  worker::PsClient& client() { return client_; }

  std::vector<torch::Tensor> params, grads;

 private:
  worker::PsClient client_{std::chrono::seconds(30), {}};
};

bool Equal(const std::vector<torch::Tensor>& a,
           const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size())
    return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (!torch::equal(a[k], b[k]))
      return false;
  }
  return true;
}

class BadPushTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data::testing::WriteTinyDataset(dir_.path(), 320, 50);
  }
  std::vector<std::string> World(int world_size, int port) {
    return {"--world_size",  std::to_string(world_size),
            "--master_port", std::to_string(port),
            "--master_addr", "127.0.0.1",
            "--data_dir",    dir_.path()};
  }
  ScratchDir dir_;
};

TEST_F(BadPushTest, AsyncNanAndInfPushesAreRefusedAndNeverApplied) {
  Process serve(
      Concat({PstrainBin(), "serve", "--model", "mlp", "--mode", "async",
              "--json", "--timeout", "30", "--checkpoint", dir_.File("m.pt")},
             World(2, 0)));
  const int port = serve.ListenPort(30);
  FakeWorker bad;
  bad.Join(1, 2, port);
  ASSERT_EQ(bad.client().Pull(0).value(), 0u);
  const auto before = bad.Snapshot();
  bad.grads[0][0][0] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(bad.client().Push(0).ok());
  ASSERT_TRUE(bad.client().Push(0).ok());
  bad.grads[0].fill_(0.01);
  bad.grads.back()[0] = std::numeric_limits<float>::infinity();
  ASSERT_TRUE(bad.client().Push(0).ok());
  ASSERT_EQ(bad.client().Pull(0).value(), 0u);  // no step was taken
  EXPECT_TRUE(Equal(bad.params, before));
  bad.grads.back().fill_(0.01);  // a finite push is applied: the test can fail
  ASSERT_TRUE(bad.client().Push(0).ok());
  ASSERT_EQ(bad.client().Pull(0).value(), 1u);
  EXPECT_FALSE(Equal(bad.params, before));
  ASSERT_TRUE(bad.client().Done(report::WorkerStats{}).ok());

  auto rs = serve.Wait(60);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  auto summary = FindEvent(rs.out, "summary");
  EXPECT_EQ(summary["refused_pushes"], 3) << rs.out;
  EXPECT_EQ(summary["steps"], 1);
  EXPECT_NE(rs.err.find("refused the push of rank 1 for version 0: key 0 "),
            std::string::npos)
      << rs.err;
}

// Sync: the bad worker's last key holds NaN while the earlier keys, already
// added into the sums piece by piece, are finite: the step is skipped from
// the refused piece on. Keys whose every piece was in before it may have
// been updated ahead of the close (ps/rules/step_order.h) and keep their step;
// the refused key never changes, and no parameter holds NaN.
TEST_F(BadPushTest, SyncStepWithANanPushIsSkippedAndOthersFinish) {
  Process serve(Concat({PstrainBin(), "serve", "--model", "mlp", "--max_steps",
                        "4", "--batch_size", "8", "--json", "--timeout", "30",
                        "--checkpoint", dir_.File("m.pt")},
                       World(3, 0)));
  const int port = serve.ListenPort(30);
  Process good(Concat({PstrainBin(), "work", "--rank", "1"}, World(3, port)));
  FakeWorker bad;
  bad.Join(2, 3, port);
  ASSERT_EQ(bad.client().Pull(0).value(), 0u);
  const auto v0 = bad.Snapshot();
  ASSERT_EQ(bad.client().PushPull(0).value(), 1u);  // finite: a real step
  const auto v1 = bad.Snapshot();
  EXPECT_FALSE(Equal(v1, v0));
  bad.grads.back().fill_(std::numeric_limits<float>::quiet_NaN());
  for (uint64_t v = 1; v < 4; ++v) {
    ASSERT_EQ(bad.client().PushPull(v).value(), v + 1);
  }
  EXPECT_TRUE(bad.params.back().equal(v1.back()));
  for (const auto& p : bad.params)
    EXPECT_TRUE(p.isfinite().all().item<bool>());
  ASSERT_TRUE(bad.client().Done(report::WorkerStats{}).ok());

  auto rg = good.Wait(60);
  EXPECT_EQ(rg.exit_code, 0) << rg.err;
  auto rs = serve.Wait(60);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  auto summary = FindEvent(rs.out, "summary");
  EXPECT_EQ(summary["refused_pushes"], 3) << rs.out;
  EXPECT_EQ(summary["discarded_steps"], 3);
  EXPECT_EQ(summary["steps"], 4);
  EXPECT_NE(rs.err.find("refused the push of rank 2 for version 1"),
            std::string::npos)
      << rs.err;
  EXPECT_NE(rs.err.find("the step is skipped"), std::string::npos);
}

// --max_frame_bytes reaches the server's connections: a worker's push of
// the mlp's ~800 KB is refused from its header. The server's error frame
// may or may not reach the worker before its own write fails on the closed
// socket, so only the server's log line is asserted word for word.
TEST_F(BadPushTest, FrameOverMaxFrameBytesIsRefused) {
  Process serve(
      Concat({PstrainBin(), "serve", "--model", "mlp", "--max_steps", "2",
              "--batch_size", "8", "--timeout", "10", "--max_frame_bytes",
              "65536", "--checkpoint", dir_.File("m.pt")},
             World(2, 0)));
  const int port = serve.ListenPort(30);
  Process work(Concat({PstrainBin(), "work", "--rank", "1", "--timeout", "10"},
                      World(2, port)));
  auto rw = work.Wait(60);
  EXPECT_EQ(rw.exit_code, 1) << rw.err;
  EXPECT_TRUE(rw.err.find("exceeds max_frame_bytes 65536") !=
                  std::string::npos ||
              rw.err.find("answer push_pull") != std::string::npos)
      << rw.err;
  auto rs = serve.Wait(60);
  EXPECT_EQ(rs.exit_code, 1) << rs.err;
  EXPECT_NE(rs.err.find("exceeds max_frame_bytes 65536"), std::string::npos)
      << rs.err;
}

// Handshake refusals a peer can provoke, each an error frame naming the
// problem while the server goes on: a rank already taken, and a peer of
// another protocol version.
TEST_F(BadPushTest, DuplicateRankAndOtherProtocolVersionAreRefused) {
  Process serve(
      Concat({PstrainBin(), "serve", "--model", "mlp", "--mode", "async",
              "--timeout", "30", "--checkpoint", dir_.File("m.pt")},
             World(2, 0)));
  const int port = serve.ListenPort(30);
  FakeWorker first;
  first.Join(1, 2, port);
  worker::PsClient second(std::chrono::seconds(30), {});
  ASSERT_TRUE(second.Connect("127.0.0.1", port).ok());
  auto dup = second.Handshake(1, 2);
  EXPECT_EQ(dup.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dup.status().message().rfind(
                "rank 1 is already connected from 127.0.0.1:", 0),
            0u)
      << dup.status().ToString();

  // A version-1 header: the version field is bytes 4..5.
  std::string meta, frame;
  wire::EncodeMeta(wire::Hello{wire::Role::kWorker, 1, 2}, &meta);
  wire::EncodeFramePrefix(wire::MsgType::kHello, 1, meta, 0, &frame);
  frame[4] = 1;
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  asio::ip::tcp::resolver resolver(io);
  asio::connect(s, resolver.resolve("127.0.0.1", std::to_string(port)));
  asio::write(s, asio::buffer(frame));
  std::string got;
  asio::error_code ec;
  char buf[512];
  while (!ec)
    got.append(buf, s.read_some(asio::buffer(buf), ec));
  wire::FrameReader reader;
  std::string_view in = got;
  ASSERT_EQ(reader.Feed(&in), wire::FrameReader::State::kFrame) << got.size();
  EXPECT_EQ(reader.header().type, wire::MsgType::kError);
  wire::ErrorMsg err;
  ASSERT_TRUE(wire::DecodeMeta(reader.meta(), &err).ok());
  EXPECT_EQ(err.code, StatusCode::kIncompatible);
  EXPECT_EQ(err.message, "protocol version 1, this build speaks 12");

  ASSERT_TRUE(first.client().Done(report::WorkerStats{}).ok());
  auto rs = serve.Wait(60);
  EXPECT_EQ(rs.exit_code, 0) << rs.err;
  EXPECT_NE(rs.err.find("rank 1 is already connected"), std::string::npos)
      << rs.err;
  EXPECT_NE(rs.err.find("protocol version 1, this build speaks 12"),
            std::string::npos)
      << rs.err;
}

}  // namespace
}  // namespace pstrain::testing
