// PushReader: a push's descriptors checked against the server's keys, its
// bytes planned piece by piece into the rule's buffers, and each piece
// checked for NaN and Inf (in the pass that sums it, for a sync rule);
// without an Engine or a socket.

#include "ps/engine/push_reader.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/peer.h"
#include "ps/job/tensor_codec.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"

namespace pstrain::ps {
namespace {

JobSpec ReaderSpec() {
  JobSpec s;
  s.mode = Mode::kSync;
  s.world_size = 3;  // two workers
  s.lr = 1.0;
  s.momentum = 0;
  return s;
}

// Key 0 spans three pieces; key 1 is one float.
struct Reader {
  Reader()
      : params{torch::zeros({static_cast<int64_t>(
                                ParameterServer::kPieceBytes / 4 * 2 + 3)})
                   .requires_grad_(),
               torch::zeros({1}).requires_grad_()},
        store(ReaderSpec(), params),
        rule(MakeUpdateRule(ReaderSpec(), &store)),
        formats(ReaderSpec(),
                {KeySpecOf("big", params[0]), KeySpecOf("one", params[1])},
                store),
        reader(&store, rule.get(), &formats),
        peer(Peer(), 0) {}

  std::vector<wire::TensorDesc> Descs(std::vector<uint32_t> keys) const {
    std::vector<wire::TensorDesc> d;
    for (uint32_t k : keys)
      d.push_back(DescribeTensor(k, params[k]));
    return d;
  }
  // Fills buffer `i` of the plan with `value` and reads it.
  int ReadFilled(const ReadPlan& plan, size_t i, float value) {
    std::vector<float> v(plan.buffers[i].bytes / 4, value);
    std::memcpy(plan.buffers[i].data, v.data(), plan.buffers[i].bytes);
    return reader.Read(peer, i);
  }

  std::vector<at::Tensor> params;
  ParameterServer store;
  std::unique_ptr<UpdateRule> rule;
  KeyFormats formats;
  PushReader reader;
  WorkerPeer peer;
};

TEST(PushReaderTest, EveryKeyOnceInAnyOrder) {
  Reader r;
  EXPECT_TRUE(r.reader.Check(r.Descs({1, 0}), {}, {}, "push_pull").ok());
  Status twice = r.reader.Check(r.Descs({0, 0}), {}, {}, "push_pull");
  EXPECT_EQ(twice.code(), StatusCode::kCorruption);
  EXPECT_EQ(twice.message(),
            "push_pull: tensor 1 is key 0, which an earlier tensor was");
  auto descs = r.Descs({0, 1});
  descs[1].key = 2;
  EXPECT_EQ(r.reader.Check(descs, {}, {}, "push").message(),
            "push: tensor 1 is key 2, expected a key below 2");
  descs = r.Descs({0, 1});
  descs[1].dims[0] = 2;
  descs[1].nbytes = 8;
  EXPECT_FALSE(r.reader.Check(descs, {}, {}, "push").ok());
}

TEST(PushReaderTest, PlansAGroupPerKeyAndABufferPerPiece) {
  Reader r;
  ReadPlan plan;
  r.reader.Plan(r.peer, r.Descs({1, 0}), {}, &plan);
  ASSERT_EQ(plan.buffers.size(), 4u);  // key 1, then key 0's three pieces
  EXPECT_EQ(plan.groups, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(plan.buffers[0].bytes, 4u);
  EXPECT_EQ(plan.buffers[1].bytes, ParameterServer::kPieceBytes);
  EXPECT_EQ(plan.buffers[3].bytes, 12u);
  ASSERT_EQ(r.peer.pieces.size(), 4u);
  EXPECT_EQ(r.peer.pieces[2].key, 0);
  EXPECT_EQ(r.peer.pieces[2].offset, ParameterServer::kPieceBytes);
}

TEST(PushReaderTest, AFinitePieceGoesToTheRuleAndANanOneRefusesThePush) {
  Reader r;
  ReadPlan plan;
  r.reader.Plan(r.peer, r.Descs({0, 1}), {}, &plan);
  EXPECT_EQ(r.ReadFilled(plan, 0, 2.0f), 0);
  EXPECT_EQ(r.peer.refused_key, -1);
  EXPECT_EQ(r.ReadFilled(plan, 3, std::numeric_limits<float>::quiet_NaN()), -1);
  EXPECT_EQ(r.peer.refused_key, 1);
  EXPECT_EQ(r.peer.refused_why, "");
  // A new push starts unrefused.
  ReadPlan again;
  r.reader.Plan(r.peer, r.Descs({0, 1}), {}, &again);
  EXPECT_EQ(r.peer.refused_key, -1);
}

// The pieces read are what the rule sums: a push of worker 0 and one of
// worker 1 close the step on their mean.
TEST(PushReaderTest, WhatIsReadIsWhatTheStepAverages) {
  Reader r;
  WorkerPeer other(Peer(), 1);
  for (auto [peer, value] : {std::pair<WorkerPeer*, float>{&r.peer, 1.0f},
                             std::pair<WorkerPeer*, float>{&other, 3.0f}}) {
    ReadPlan plan;
    r.reader.Plan(*peer, r.Descs({0, 1}), {}, &plan);
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      std::vector<float> v(plan.buffers[i].bytes / 4, value);
      std::memcpy(plan.buffers[i].data, v.data(), plan.buffers[i].bytes);
      r.reader.Read(*peer, i);
    }
    ASSERT_TRUE(r.rule->Push(peer->worker, 0, false).ok());
  }
  r.rule->UpdateAllKeys();
  EXPECT_EQ(r.store.version(), 1u);
  EXPECT_FLOAT_EQ(r.params[1].item<float>(), -2.0f);  // 0 - 1.0 * mean 2
  EXPECT_FLOAT_EQ(r.params[0][-1].item<float>(), -2.0f);
}

// A sync step's pieces may be read where they lie (a shared-memory ring):
// summed as copied ones are, and refused on NaN, with nothing written to
// the rule's buffer.
TEST(PushReaderTest, PiecesReadWhereTheyLieAreSummedAsCopiedOnes) {
  Reader r;
  WorkerPeer other(Peer(), 1);
  ReadPlan plan;
  r.reader.Plan(r.peer, r.Descs({0, 1}), {}, &plan);
  ASSERT_TRUE(plan.in_place);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    ASSERT_TRUE(r.reader.ReadsAt(r.peer, i));
    std::vector<float> ring(plan.buffers[i].bytes / 4, 1.0f);
    EXPECT_GE(
        r.reader.ReadAt(r.peer, i, reinterpret_cast<const char*>(ring.data())),
        0);
  }
  ASSERT_TRUE(r.rule->Push(r.peer.worker, 0, false).ok());
  ReadPlan copied;
  r.reader.Plan(other, r.Descs({0, 1}), {}, &copied);
  for (size_t i = 0; i < copied.buffers.size(); ++i) {
    std::vector<float> v(copied.buffers[i].bytes / 4, 3.0f);
    std::memcpy(copied.buffers[i].data, v.data(), copied.buffers[i].bytes);
    r.reader.Read(other, i);
  }
  ASSERT_TRUE(r.rule->Push(other.worker, 0, false).ok());
  r.rule->UpdateAllKeys();
  EXPECT_FLOAT_EQ(r.params[1].item<float>(), -2.0f);
  EXPECT_FLOAT_EQ(r.params[0][-1].item<float>(), -2.0f);

  ReadPlan next;
  r.reader.Plan(r.peer, r.Descs({0, 1}), {}, &next);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(r.reader.ReadAt(r.peer, 3, reinterpret_cast<const char*>(&nan)),
            -1);
  EXPECT_EQ(r.peer.refused_key, 1);
}

// A piece with NaN read in place is summed as it is checked, so its sum
// holds the NaN: the step it discards is skipped even when its worker is
// lost before its push ends, and that sum never steps.
TEST(PushReaderTest, ANanPieceReadInPlaceDiscardsItsStepAtOnce) {
  Reader r;
  WorkerPeer other(Peer(), 1);
  ReadPlan plan;
  r.reader.Plan(other, r.Descs({0, 1}), {}, &plan);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    std::vector<float> v(plan.buffers[i].bytes / 4, 3.0f);
    std::memcpy(plan.buffers[i].data, v.data(), plan.buffers[i].bytes);
    EXPECT_GE(r.reader.Read(other, i), 0);
  }
  ASSERT_TRUE(r.rule->Push(other.worker, 0, false).ok());
  ReadPlan mine;
  r.reader.Plan(r.peer, r.Descs({0, 1}), {}, &mine);
  for (size_t i = 0; i < 3; ++i) {
    std::vector<float> ring(mine.buffers[i].bytes / 4, 1.0f);
    EXPECT_GE(
        r.reader.ReadAt(r.peer, i, reinterpret_cast<const char*>(ring.data())),
        0);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(r.reader.ReadAt(r.peer, 3, reinterpret_cast<const char*>(&nan)),
            -1);
  EXPECT_TRUE(r.rule->RemoveWorker(r.peer.worker));  // closes the step
  r.rule->UpdateAllKeys();
  EXPECT_EQ(r.store.version(), 1u);
  EXPECT_EQ(r.rule->discarded_steps(), 1u);
  EXPECT_FLOAT_EQ(r.params[0][0].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(r.params[1].item<float>(), 0.0f);
}

// An async push steps with the whole gradient, so it lands in the rule's
// buffer: nothing is read in place.
TEST(PushReaderTest, AnAsyncPushIsCopiedIntoItsBuffer) {
  JobSpec spec = ReaderSpec();
  spec.mode = Mode::kAsync;
  std::vector<at::Tensor> params{torch::zeros({4}).requires_grad_()};
  ParameterServer store(spec, params);
  auto rule = MakeUpdateRule(spec, &store);
  KeyFormats formats(spec, {KeySpecOf("w", params[0])}, store);
  PushReader reader(&store, rule.get(), &formats);
  WorkerPeer peer(Peer(), 0);
  ReadPlan plan;
  reader.Plan(peer, {DescribeTensor(0, params[0])}, {}, &plan);
  EXPECT_FALSE(plan.in_place);
  EXPECT_FALSE(reader.ReadsAt(peer, 0));
}

}  // namespace
}  // namespace pstrain::ps
