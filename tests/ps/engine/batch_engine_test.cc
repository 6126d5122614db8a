// The Engine under --placement server, with a fake BatchRunner whose
// results the test hands back: batches checked from their descriptors,
// results applied as the workers' pushes by the same update rules, and
// batch_done replies. No threads, no sockets.

#include <list>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/batch_desk.h"
#include "ps/engine/engine.h"
#include "ps/job/tensor_codec.h"
#include "testing/engine_harness.h"

namespace pstrain::ps {
namespace {

using testing::EngineHarness;

class FakeRunner : public BatchRunner {
 public:
  void Run(const BatchJob& job) override { jobs.push_back(job); }
  std::vector<BatchJob> jobs;
};

JobSpec Spec(Mode mode, int workers) {
  JobSpec s = testing::SgdSpec(mode, workers);
  s.placement = "server";
  // Each push steps with --lr: the rule these tests are about (per_sample
  // has OptimizerTest.PerSamplePushStepsAShareOfTheLr).
  s.async_lr = "per_push";
  return s;
}

// Samples of 3 features, class labels.
BatchShapes Shapes() {
  return BatchShapes{{3}, {}, false};
}

struct Harness {
  Harness(Mode mode, int workers)
      : h(Spec(mode, workers), {torch::zeros({2}).requires_grad_()}) {
    h.engine().batches().set_runner(&runner, Shapes());
  }
  Status Send(PeerId peer, uint64_t id, const at::Tensor& x,
              const at::Tensor& y) {
    std::string meta;
    wire::EncodeMeta(wire::PushBatch{h.server().version(), DescribeTensor(0, x),
                                     DescribeTensor(1, y)},
                     &meta);
    return h.FeedRaw(peer, wire::MsgType::kPushBatch, meta, id,
                     {static_cast<const char*>(x.data_ptr()),
                      static_cast<const char*>(y.data_ptr())},
                     x.nbytes() + y.nbytes());
  }
  // The runner's job `i` is done: its gradient is `grad`, its loss `loss`.
  void Done(size_t i, const at::Tensor& grad, double loss) {
    keys.push_back({grad});
    BatchResult r;
    const BatchJob& job = runner.jobs.at(i);
    r.peer = job.peer;
    r.request_id = job.request_id;
    r.worker = job.worker;
    r.version = job.version;
    r.loss = loss;
    r.keys = &keys.back();
    h.engine().OnBatchDone(r, h.now());
    h.Settle();
  }
  // The batch_done replies to `peer`: (version, loss).
  std::vector<std::pair<uint64_t, double>> Replies(PeerId peer) {
    std::vector<std::pair<uint64_t, double>> out;
    for (const auto& s : h.outbox().sent) {
      if (s.peer != peer || s.type != wire::MsgType::kBatchDone)
        continue;
      wire::BatchDone d;
      EXPECT_TRUE(wire::DecodeMeta(s.meta, &d).ok());
      out.emplace_back(d.version, d.loss);
    }
    return out;
  }

  FakeRunner runner;
  EngineHarness h;
  std::list<std::vector<at::Tensor>> keys;  // what results lend, kept
};

// A batch of 4 samples the model takes.
at::Tensor X() {
  return torch::ones({4, 3});
}
at::Tensor Y() {
  return torch::tensor({0, 1, 1, 0}, torch::kInt64);
}

TEST(BatchEngineTest, SyncStepsOnceOnTheMeanOfEveryWorkersBatch) {
  Harness t(Mode::kSync, 2);
  const PeerId a = t.h.JoinWorker(1), b = t.h.JoinWorker(2);
  ASSERT_TRUE(t.Send(a, 10, X(), Y()).ok());
  ASSERT_TRUE(t.Send(b, 11, X() * 2, Y()).ok());
  ASSERT_EQ(t.runner.jobs.size(), 2u);
  EXPECT_TRUE(torch::equal(t.runner.jobs[1].x, X() * 2));
  EXPECT_TRUE(torch::equal(t.runner.jobs[1].y, Y()));
  t.Done(0, torch::tensor({1.0f, 2.0f}), 0.25);
  EXPECT_EQ(t.h.server().version(), 0u);  // waits for the other batch
  EXPECT_TRUE(t.Replies(a).empty());
  t.Done(1, torch::tensor({3.0f, 4.0f}), 0.75);
  EXPECT_EQ(t.h.server().version(), 1u);
  // 0 - lr * mean: -0.5 * (2, 3).
  EXPECT_TRUE(
      torch::allclose(t.h.server().params()[0], torch::tensor({-1.0f, -1.5f})));
  EXPECT_EQ(t.Replies(a),
            (std::vector<std::pair<uint64_t, double>>{{1, 0.25}}));
  EXPECT_EQ(t.Replies(b),
            (std::vector<std::pair<uint64_t, double>>{{1, 0.75}}));
}

TEST(BatchEngineTest, AsyncStepsOnEachBatch) {
  Harness t(Mode::kAsync, 2);
  const PeerId a = t.h.JoinWorker(1);
  t.h.JoinWorker(2);
  ASSERT_TRUE(t.Send(a, 10, X(), Y()).ok());
  t.Done(0, torch::tensor({2.0f, 2.0f}), 0.5);
  EXPECT_EQ(t.h.server().version(), 1u);
  EXPECT_TRUE(
      torch::allclose(t.h.server().params()[0], torch::tensor({-1.0f, -1.0f})));
  EXPECT_EQ(t.Replies(a), (std::vector<std::pair<uint64_t, double>>{{1, 0.5}}));
}

// A batch of the wrong shape: the shapes are named, only that worker is lost,
// and the step goes on with the other.
TEST(BatchEngineTest, ABatchOfTheWrongShapeIsRefusedAndTheOthersGoOn) {
  Harness t(Mode::kSync, 2);
  const PeerId a = t.h.JoinWorker(1), b = t.h.JoinWorker(2);
  Status refused = t.Send(a, 10, torch::ones({4, 7}), Y());
  EXPECT_EQ(refused.message(),
            "push_batch: x is float32 [4, 7]; the model takes float32 [B, 3]");
  EXPECT_TRUE(t.runner.jobs.empty());
  EXPECT_EQ(t.Send(a, 10, X(), torch::ones({4})).message(),
            "push_batch: y is float32 [4]; expected int64 [B]");
  t.h.Close(a, InvalidArgument("refused"));  // as the service does then
  ASSERT_TRUE(t.Send(b, 11, X(), Y()).ok());
  t.Done(0, torch::tensor({2.0f, 2.0f}), 0.5);
  EXPECT_EQ(t.h.server().version(), 1u);
  EXPECT_EQ(t.Replies(b).size(), 1u);
}

TEST(BatchEngineTest, GradientsAndPullsAreRefused) {
  Harness t(Mode::kSync, 1);
  const PeerId a = t.h.JoinWorker(1);
  EXPECT_EQ(t.h.Push(a, 0, {torch::ones({2})}, 5).message(),
            "push_pull: the model trains on the server (--placement server): "
            "send push_batch");
  (void)t.h.Feed(a, wire::Pull{0}, 6);
  auto closed = t.h.ClosedFor(a);
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->why.message(),
            "pull: the model trains on the server (--placement server)");
}

TEST(BatchEngineTest, ASecondBatchWhileOneComputesIsRefused) {
  Harness t(Mode::kSync, 2);
  const PeerId a = t.h.JoinWorker(1);
  ASSERT_TRUE(t.Send(a, 10, X(), Y()).ok());
  EXPECT_EQ(t.Send(a, 11, X(), Y()).message(),
            "push_batch: the last batch is still computing");
}

TEST(BatchEngineTest, AFailedBatchRefusesItsWorker) {
  Harness t(Mode::kSync, 1);
  const PeerId a = t.h.JoinWorker(1);
  ASSERT_TRUE(t.Send(a, 10, X(), Y()).ok());
  BatchResult r;
  r.peer = a;
  r.request_id = 10;
  r.status = InvalidArgument("push_batch: forward failed");
  t.h.engine().OnBatchDone(r, t.h.now());
  auto closed = t.h.ClosedFor(a);
  ASSERT_TRUE(closed);
  EXPECT_TRUE(closed->error_frame);
  EXPECT_EQ(closed->why.message(), "push_batch: forward failed");
  EXPECT_EQ(t.h.server().version(), 0u);
}

TEST(BatchEngineTest, AResultForAWorkerGoneIsDropped) {
  Harness t(Mode::kAsync, 2);
  const PeerId a = t.h.JoinWorker(1);
  t.h.JoinWorker(2);
  ASSERT_TRUE(t.Send(a, 10, X(), Y()).ok());
  t.h.Close(a);
  t.Done(0, torch::tensor({2.0f, 2.0f}), 0.5);
  EXPECT_EQ(t.h.server().version(), 0u);
  EXPECT_TRUE(torch::equal(t.h.server().params()[0], torch::zeros({2})));
}

TEST(BatchEngineTest, AJobOfWorkerPlacementRefusesBatches) {
  JobSpec spec = Spec(Mode::kSync, 1);
  spec.placement = "worker";
  EngineHarness h(spec, {torch::zeros({2}).requires_grad_()});
  const PeerId a = h.JoinWorker(1);
  const at::Tensor x = X(), y = Y();
  std::string meta;
  wire::EncodeMeta(
      wire::PushBatch{0, DescribeTensor(0, x), DescribeTensor(1, y)}, &meta);
  EXPECT_EQ(h.FeedRaw(a, wire::MsgType::kPushBatch, meta, 3,
                      {static_cast<const char*>(x.data_ptr()),
                       static_cast<const char*>(y.data_ptr())},
                      x.nbytes() + y.nbytes())
                .message(),
            "push_batch: the job trains on the workers (--placement worker)");
}

}  // namespace
}  // namespace pstrain::ps
