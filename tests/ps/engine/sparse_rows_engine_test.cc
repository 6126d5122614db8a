// Row-sparse keys through the Engine and a real ParameterServer, without
// sockets (testing/engine_harness.h): sparse sync steps equal dense ones,
// async applies each push's rows, a reply carries only the rows asked for,
// and malformed row ids are refused, each with its own error, a log line
// naming the rank, and nothing applied.

#include <algorithm>
#include <cstring>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/engine.h"
#include "ps/job/sparse_keys.h"
#include "testing/engine_harness.h"

namespace pstrain::ps {
namespace {

using testing::EngineHarness;
using KeyRows = EngineHarness::KeyRows;

constexpr int64_t kRows = 10, kDim = 8;

JobSpec Spec(Mode mode, const std::string& optimizer) {
  JobSpec s;
  s.mode = mode;
  s.optimizer = optimizer;
  s.lr = 0.5;
  s.momentum = 0;
  s.world_size = 3;  // 2 workers
  s.dead_after = 0;
  // Each push steps with --lr: the rule these tests are about (per_sample
  // has OptimizerTest.PerSamplePushStepsAShareOfTheLr).
  s.async_lr = "per_push";
  return s;
}

// Key 0: a table [kRows, kDim]; key 1: a bias [3].
std::vector<at::Tensor> Params() {
  torch::manual_seed(2);
  return {torch::randn({kRows, kDim}).requires_grad_(),
          torch::randn({3}).requires_grad_()};
}

// Worker w's gradient at step t: rows {t, w + 4, 9} of the table (row 9 by
// both workers), a bias gradient.
struct Grad {
  std::vector<int64_t> ids;
  at::Tensor rows, bias;
  at::Tensor Dense() const {
    return torch::zeros({kRows, kDim}).index_add_(0, torch::tensor(ids), rows);
  }
};

Grad GradOf(int w, int t) {
  torch::manual_seed(100 * w + t);
  Grad g;
  g.ids = {int64_t{t}, int64_t{w + 4}, int64_t{9}};
  std::sort(g.ids.begin(), g.ids.end());
  g.ids.erase(std::unique(g.ids.begin(), g.ids.end()), g.ids.end());
  g.rows = torch::randn({static_cast<int64_t>(g.ids.size()), kDim});
  g.bias = torch::randn({3});
  return g;
}

at::Tensor Table(EngineHarness& h) {
  return h.server().params()[0].detach();
}

// Runs `steps` sync steps of two workers, dense or sparse; returns the
// harness's parameters.
std::vector<at::Tensor> RunSync(const std::string& optimizer, bool sparse,
                                int steps) {
  EngineHarness h(
      Spec(Mode::kSync, optimizer), Params(), {},
      sparse ? std::vector<bool>{true, false} : std::vector<bool>{});
  PeerId peers[2] = {h.JoinWorker(1), h.JoinWorker(2)};
  for (int t = 0; t < steps; ++t) {
    for (int w = 0; w < 2; ++w) {
      const Grad g = GradOf(w, t);
      Status s = sparse
                     ? h.PushRows(peers[w], t, {at::Tensor(), g.bias},
                                  {{0, g.ids, g.rows}}, {{0, {1, 2}}}, 10 + t)
                     : h.Push(peers[w], t, {g.Dense(), g.bias}, 10 + t);
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    h.Settle();
    EXPECT_EQ(h.server().version(), static_cast<uint64_t>(t + 1));
  }
  return {Table(h).clone(), h.server().params()[1].detach().clone()};
}

TEST(SparseRowsEngineTest, SyncSgdEqualsDense) {
  auto dense = RunSync("sgd", false, 4), sparse = RunSync("sgd", true, 4);
  EXPECT_TRUE(torch::equal(dense[0], sparse[0]))
      << (dense[0] - sparse[0]).abs().max();
  EXPECT_TRUE(torch::equal(dense[1], sparse[1]));
}

TEST(SparseRowsEngineTest, SyncAdagradEqualsDense) {
  auto dense = RunSync("adagrad", false, 4),
       sparse = RunSync("adagrad", true, 4);
  EXPECT_TRUE(torch::equal(dense[0], sparse[0]))
      << (dense[0] - sparse[0]).abs().max();
  EXPECT_TRUE(torch::equal(dense[1], sparse[1]));
}

// --num_servers 2: rows [0, 6) of the table on one server, [6, 10) and
// the bias on the other (as a shard plan's row slices), each push split
// by RowsInRange: the same parameters as one server, exactly.
TEST(SparseRowsEngineTest, TwoServersOfRowRangesEqualOne) {
  const JobSpec spec = Spec(Mode::kSync, "adagrad");
  const at::Tensor init = Params()[0].detach();
  const at::Tensor bias = Params()[1].detach();
  EngineHarness s0(spec, {init.slice(0, 0, 6).clone().requires_grad_()}, {},
                   {true});
  EngineHarness s1(spec,
                   {init.slice(0, 6).clone().requires_grad_(),
                    bias.clone().requires_grad_()},
                   {}, {true, false});
  PeerId p0[2] = {s0.JoinWorker(1), s0.JoinWorker(2)};
  PeerId p1[2] = {s1.JoinWorker(1), s1.JoinWorker(2)};
  for (int t = 0; t < 4; ++t) {
    for (int w = 0; w < 2; ++w) {
      const Grad g = GradOf(w, t);
      std::vector<int64_t> ids0, ids1;
      RowsInRange(g.ids, 0, 6, &ids0);
      RowsInRange(g.ids, 6, kRows, &ids1);
      const at::Tensor rows0 = g.rows.slice(0, 0, ids0.size());
      const at::Tensor rows1 = g.rows.slice(0, ids0.size());
      ASSERT_TRUE(s0.PushRows(p0[w], t, {at::Tensor()}, {{0, ids0, rows0}},
                              {{0, {0, 5}}}, 10 + t)
                      .ok());
      ASSERT_TRUE(s1.PushRows(p1[w], t, {at::Tensor(), g.bias},
                              {{0, ids1, rows1}}, {{0, {3}}}, 10 + t)
                      .ok());
    }
    s0.Settle();
    s1.Settle();
  }
  const auto one = RunSync("adagrad", true, 4);
  EXPECT_TRUE(torch::equal(torch::cat({Table(s0), Table(s1)}), one[0]));
  EXPECT_TRUE(torch::equal(s1.server().params()[1].detach(), one[1]));
}

// The reply to a push_pull with requests: the dense keys, then the rows
// asked for, of the new version; a plain pull gets the whole table.
TEST(SparseRowsEngineTest, TheReplyCarriesTheRowsAskedFor) {
  EngineHarness h(Spec(Mode::kSync, "sgd"), Params(), {}, {true, false});
  PeerId a = h.JoinWorker(1), b = h.JoinWorker(2);
  const Grad ga = GradOf(0, 0), gb = GradOf(1, 0);
  ASSERT_TRUE(h.PushRows(a, 0, {at::Tensor(), ga.bias}, {{0, ga.ids, ga.rows}},
                         {{0, {2, 5, 9}}}, 7)
                  .ok());
  ASSERT_TRUE(
      h.PushRows(b, 0, {at::Tensor(), gb.bias}, {{0, gb.ids, gb.rows}}, {}, 8)
          .ok());
  h.Settle();
  const testing::FakeOutbox::Sent* reply = nullptr;
  for (const auto& s : h.outbox().sent) {
    if (s.peer == a && s.type == wire::MsgType::kParams)
      reply = &s;
  }
  ASSERT_NE(reply, nullptr);
  wire::Params m;
  ASSERT_TRUE(wire::DecodeMeta(reply->meta, &m).ok());
  EXPECT_EQ(m.version, 1u);
  ASSERT_EQ(m.params.size(), 1u);  // the bias
  EXPECT_EQ(m.params[0].key, 1u);
  ASSERT_EQ(m.rows.size(), 1u);
  EXPECT_EQ(m.rows[0].ids, (std::vector<int64_t>{2, 5, 9}));
  ASSERT_EQ(reply->data.size(), 2u);
  at::Tensor rows = torch::empty({3, kDim});
  ASSERT_EQ(reply->data[1].bytes, rows.nbytes());
  std::memcpy(rows.data_ptr(), reply->data[1].data, rows.nbytes());
  EXPECT_TRUE(
      torch::equal(rows, Table(h).index_select(0, torch::tensor({2, 5, 9}))));
  // b asked for nothing: its reply is the whole table.
  for (const auto& s : h.outbox().sent) {
    if (s.peer == b && s.type == wire::MsgType::kParams) {
      ASSERT_TRUE(wire::DecodeMeta(s.meta, &m).ok());
      EXPECT_EQ(m.params.size(), 2u);
      EXPECT_TRUE(m.rows.empty());
    }
  }
}

TEST(SparseRowsEngineTest, AsyncAppliesEachPushsRows) {
  EngineHarness h(Spec(Mode::kAsync, "sgd"), Params(), {}, {true, false});
  PeerId a = h.JoinWorker(1);
  h.JoinWorker(2);
  const at::Tensor before = Table(h).clone();
  const Grad g = GradOf(0, 1);
  ASSERT_TRUE(
      h.PushRows(a, 0, {at::Tensor(), g.bias}, {{0, g.ids, g.rows}}, {}, 3)
          .ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_TRUE(torch::allclose(Table(h), before - 0.5 * g.Dense()));
  EXPECT_EQ(h.server().rows_stepped(), g.ids.size());
}

// A malformed push changes nothing, its worker's connection is refused,
// and the log names the rank.
void ExpectUnchanged(EngineHarness& h, const std::vector<at::Tensor>& before) {
  EXPECT_EQ(h.server().version(), 0u);
  EXPECT_TRUE(torch::equal(Table(h), before[0]));
}

bool LogHas(EngineHarness& h, const std::string& text) {
  for (const auto& line : h.outbox().info) {
    if (line.find(text) != std::string::npos)
      return true;
  }
  return false;
}

TEST(SparseRowsEngineTest, RefusesARowIdOutOfRange) {
  EngineHarness h(Spec(Mode::kSync, "sgd"), Params(), {}, {true, false});
  PeerId a = h.JoinWorker(1);
  const std::vector<at::Tensor> before = {Table(h).clone()};
  Status s = h.PushRows(a, 0, {at::Tensor(), torch::ones({3})},
                        {{0, {3, 10}, torch::ones({2, kDim})}}, {}, 5);
  EXPECT_EQ(s.message(),
            "push_pull: rows 0 (key 0, k0): row id 10 at 1 is out of range: "
            "the table has 10 rows");
  EXPECT_TRUE(LogHas(h, "refused push_pull from rank 1: push_pull: rows 0"));
  ExpectUnchanged(h, before);
  s = h.PushRows(a, 0, {at::Tensor(), torch::ones({3})},
                 {{0, {3}, torch::ones({1, kDim})}}, {{0, {4, 12}}}, 6);
  EXPECT_EQ(s.message(),
            "push_pull: request 0 (key 0, k0): row id 12 at 1 is out of "
            "range: the table has 10 rows");
}

// Duplicated and out-of-order ids are refused by the frame's own checks
// (wire/messages.h), before the Engine sees it: the connection closes
// with that error, and the Engine logs the loss of the rank with it.
void ExpectWireRefusal(const std::vector<int64_t>& ids,
                       const std::string& error) {
  EngineHarness h(Spec(Mode::kSync, "sgd"), Params(), {}, {true, false});
  PeerId a = h.JoinWorker(1);
  h.JoinWorker(2);
  const std::vector<at::Tensor> before = {Table(h).clone()};
  Status s = h.PushRows(a, 0, {at::Tensor(), torch::ones({3})},
                        {{0, ids, torch::ones({3, kDim})}}, {}, 5);
  EXPECT_EQ(s.message(), error);
  h.Close(a, s);
  EXPECT_TRUE(LogHas(h, "rank 1 lost at version 0 (" + error + ")"));
  ExpectUnchanged(h, before);
}

TEST(SparseRowsEngineTest, RefusesADuplicatedRowId) {
  ExpectWireRefusal({1, 4, 4},
                    "push_pull: rows 0: row id 4 at 2 is duplicated: the id "
                    "before it is the same");
}

TEST(SparseRowsEngineTest, RefusesRowIdsOutOfOrder) {
  ExpectWireRefusal({1, 5, 3},
                    "push_pull: rows 0: row id 3 at 2 is out of order: below "
                    "5 before it (ids must ascend)");
}

TEST(SparseRowsEngineTest, RefusesAWholeTensorForARowSparseKey) {
  EngineHarness h(Spec(Mode::kSync, "sgd"), Params(), {}, {true, false});
  PeerId a = h.JoinWorker(1);
  Status s = h.Push(a, 0, {torch::ones({kRows, kDim}), torch::ones({3})}, 5);
  EXPECT_EQ(s.message(),
            "push_pull: tensor 0 is key 0 (k0), which is row-sparse: "
            "expected its rows");
}

}  // namespace
}  // namespace pstrain::ps
