// Replication after aggregation (Li et al., OSDI 2014, section 4.3): a
// standby that replays each step's record (TakeStepRecord, then
// ParameterServer::Replay) holds, bit for bit, what its primary holds,
// for every optimizer, with clipping, in sync and async; and a version no
// Step made has no record.

#include <limits>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/step_records.h"
#include "ps/store/parameter_server.h"
#include "ps/store/snapshot.h"
#include "testing/shard.h"

namespace pstrain::ps {
namespace {

JobSpec Spec(Mode mode, const std::string& optimizer) {
  JobSpec s;
  s.mode = mode;
  s.optimizer = optimizer;
  s.lr = 0.05;
  s.momentum = 0.9;
  s.nesterov = optimizer == "sgd";
  s.weight_decay = 0.01;
  s.clip_grad_norm = 1.5;  // the record carries the clipped gradients
  s.world_size = 3;
  return s;
}

// A parameter, a float buffer and an int64 buffer, as BatchNorm has.
std::vector<at::Tensor> Keys() {
  return {torch::linspace(-1, 1, 7).requires_grad_(), torch::zeros({3}),
          torch::tensor(int64_t{0})};
}

std::vector<at::Tensor> Clones(const std::vector<at::Tensor>& keys) {
  std::vector<at::Tensor> out;
  for (const auto& k : keys)
    out.push_back(k.detach().clone().requires_grad_(k.requires_grad()));
  return out;
}

// Worker w's push of random values.
void Push(testing::Shard& ps, int w, int step) {
  const at::Tensor g = torch::randn({7});
  const at::Tensor m = torch::randn({3});
  const int64_t n = step + 1;
  if (ps.buffers_pushes()) {
    ps.grad_buffer(w)[0].copy_(g);
    ps.grad_buffer(w)[1].copy_(m);
    ps.grad_buffer(w)[2].fill_(n);
    return;
  }
  ps.Accumulate(w, 0, 0, g.data_ptr(), g.nbytes());
  ps.Accumulate(w, 1, 0, m.data_ptr(), m.nbytes());
  ps.Accumulate(w, 2, 0, &n, sizeof(n));
}

void ExpectSameBits(const std::vector<at::Tensor>& a,
                    const std::vector<at::Tensor>& b, const std::string& at) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_TRUE(a[k].equal(b[k])) << at << ", key " << k;
}

TEST(StepRecordTest, AReplayingStandbyHoldsThePrimarysBits) {
  torch::manual_seed(5);
  for (Mode mode : {Mode::kSync, Mode::kAsync}) {
    for (const char* optimizer :
         {"sgd", "adam", "adamw", "adagrad", "rmsprop"}) {
      const JobSpec spec = Spec(mode, optimizer);
      const std::string at = std::string(ModeName(mode)) + " " + optimizer;
      auto keys = Keys();
      testing::Shard primary(spec, keys);
      ParameterServer standby(spec, Clones(keys));
      for (int step = 0; step < 4; ++step) {
        const uint64_t version = primary.store().version();
        Push(primary, 0, step);
        Push(primary, 1, step);
        ASSERT_TRUE(primary.Push(0, version).ok());
        if (mode == Mode::kSync) {
          ASSERT_TRUE(*primary.Push(1, version));
        }
        auto record = TakeStepRecord(primary.store(), {}, {});
        ASSERT_NE(record, nullptr) << at;
        EXPECT_EQ(record->version, primary.store().version());
        standby.Replay(record->params, record->lr);
        if (mode == Mode::kAsync) {  // the second push is a step of its own
          ASSERT_TRUE(primary.Push(1, version).ok());
          record = TakeStepRecord(primary.store(), {}, {});
          ASSERT_NE(record, nullptr) << at;
          standby.Replay(record->params, record->lr);
        }
        EXPECT_EQ(standby.version(), primary.store().version()) << at;
        ExpectSameBits(standby.params(), primary.store().params(),
                       at + ", step " + std::to_string(step));
      }
    }
  }
}

// A step taken key by key makes its version with AdvanceVersion: its
// gradients are not all there at the end, so a standby gets a whole copy.
TEST(StepRecordTest, AVersionNoStepMadeHasNoRecord) {
  const JobSpec spec = Spec(Mode::kSync, "sgd");
  testing::Shard ps(spec, Keys());
  EXPECT_EQ(TakeStepRecord(ps.store(), {}, {}), nullptr);  // version 0
  ps.set_step_by_key(true);
  Push(ps, 0, 0);
  Push(ps, 1, 0);
  ASSERT_TRUE(ps.Push(0, 0).ok());
  ASSERT_TRUE(*ps.Push(1, 0));
  ps.UpdateAllKeys();
  EXPECT_EQ(ps.store().version(), 1u);
  EXPECT_FALSE(ps.store().StepLr(1).has_value());
  EXPECT_EQ(TakeStepRecord(ps.store(), {}, {}), nullptr);
}

TEST(StepRecordTest, TheRecordIsOfTheCurrentVersionOnly) {
  testing::Shard ps(Spec(Mode::kSync, "sgd"), Keys());
  Push(ps, 0, 0);
  Push(ps, 1, 0);
  ASSERT_TRUE(ps.Push(0, 0).ok());
  ASSERT_TRUE(*ps.Push(1, 0));
  ASSERT_TRUE(ps.store().StepLr(1).has_value());
  EXPECT_EQ(*ps.store().StepLr(1), ps.store().lr());
  EXPECT_FALSE(ps.store().StepLr(0).has_value());
  EXPECT_FALSE(ps.store().StepLr(2).has_value());
  auto record = TakeStepRecord(ps.store(), {4, 5}, {});
  ASSERT_NE(record, nullptr);
  EXPECT_TRUE(record->step_record);
  EXPECT_EQ(record->applied, (std::vector<int64_t>{4, 5}));
  ASSERT_EQ(record->params.size(), 3u);
  EXPECT_TRUE(record->params[2].equal(torch::tensor(int64_t{1})));
}

std::shared_ptr<const Snapshot> RecordOf(uint64_t version) {
  auto r = std::make_shared<Snapshot>();
  r->version = version;
  r->step_record = true;
  return r;
}

TEST(StepRecordsTest, KeepsEachUntilEveryStandbyHoldsItAndAtMostMax) {
  StepRecords records;
  for (uint64_t v = 1; v <= 3; ++v)
    records.Add(RecordOf(v));
  EXPECT_EQ(records.Find(2)->version, 2u);
  EXPECT_EQ(records.Find(4), nullptr);
  records.DropThrough(2);
  EXPECT_EQ(records.size(), 1u);
  EXPECT_EQ(records.Find(2), nullptr);
  EXPECT_EQ(records.Find(3)->version, 3u);
  for (uint64_t v = 4; v < 4 + StepRecords::kMaxRecords; ++v)
    records.Add(RecordOf(v));
  EXPECT_EQ(records.size(), StepRecords::kMaxRecords);
  EXPECT_EQ(records.Find(3), nullptr);                        // the oldest went
  records.DropThrough(std::numeric_limits<uint64_t>::max());  // no standby
  EXPECT_EQ(records.size(), 0u);
}

}  // namespace
}  // namespace pstrain::ps
