#include "ps/job/shard_plan.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model_zoo.h"
#include "ps/job/tensor_codec.h"

namespace pstrain::ps {
namespace {

std::vector<wire::KeySpec> Keys(
    const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<wire::KeySpec> keys;
  for (size_t i = 0; i < shapes.size(); ++i) {
    keys.push_back({"k" + std::to_string(i), wire::DType::kFloat32, shapes[i]});
  }
  return keys;
}

TEST(ShardPlanTest, OneServerKeepsEveryKeyWhole) {
  auto plan = PlanShards(Keys({{1000, 1000}, {10}}), 1, 1024);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->slices.size(), 2u);
  EXPECT_TRUE(plan->slices[0].whole);
  EXPECT_EQ(plan->by_server[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(plan->server_bytes[0], 4000040u);
  EXPECT_DOUBLE_EQ(plan->imbalance(), 1.0);
}

// Streaming sync steps and sends slices as they come, so one server slices
// large keys too; the other modes keep them whole.
TEST(ShardPlanTest, OneServerSlicesInStreamingSyncOnly) {
  const auto keys = Keys({{128, 9216}, {10}});
  JobSpec spec;
  spec.num_servers = 1;
  spec.slice_bytes = 512 * 1024;
  spec.mode = Mode::kSync;
  auto sync = PlanShardsOf(keys, spec);
  ASSERT_TRUE(sync.ok());
  EXPECT_EQ(sync->slices.size(), 11u);  // 10 slices of 12 or 13 rows, 1
  EXPECT_FALSE(sync->slices[0].whole);
  EXPECT_EQ(sync->by_server[0].size(), 11u);
  for (auto [mode, backup] : {std::pair{Mode::kAsync, 0}, {Mode::kSync, 1}}) {
    spec.mode = mode;
    spec.backup_workers = backup;
    spec.world_size = 4;
    auto whole = PlanShardsOf(keys, spec);
    ASSERT_TRUE(whole.ok());
    EXPECT_EQ(whole->slices.size(), 2u);
  }
  spec.mode = Mode::kSync;
  spec.backup_workers = 0;
  spec.placement = "server";
  EXPECT_EQ(PlanShardsOf(keys, spec)->slices.size(), 2u);
}

TEST(ShardPlanTest, SplitsLargeKeysByRowsAndBalancesBytes) {
  // 128 x 9216 float32 (Net's fc1, 4.5 MiB) over 2 servers in 512 KiB slices.
  auto plan =
      PlanShards(Keys({{32, 1, 3, 3}, {128, 9216}, {10}}), 2, 512 * 1024);
  ASSERT_TRUE(plan.ok());
  int fc1_slices = 0;
  int64_t next_row = 0;
  for (const Slice& s : plan->slices) {
    if (s.key != 1)
      continue;
    ++fc1_slices;
    EXPECT_FALSE(s.whole);
    EXPECT_EQ(s.row_begin, next_row);  // in order, no gap, no overlap
    next_row = s.row_end;
    EXPECT_LE(s.bytes, 512u * 1024);
    EXPECT_EQ(s.bytes,
              static_cast<uint64_t>(s.row_end - s.row_begin) * 9216 * 4);
  }
  EXPECT_EQ(fc1_slices,
            10);  // 14 rows of 36864 bytes fit in 512 KiB: ceil(128 / 14)
  EXPECT_EQ(next_row, 128);
  EXPECT_LT(plan->imbalance(), 1.12);
  uint64_t total = 0;
  for (int s = 0; s < 2; ++s) {
    uint64_t bytes = 0;
    for (int i : plan->by_server[s])
      bytes += plan->slices[i].bytes;
    EXPECT_EQ(bytes, plan->server_bytes[s]);
    total += bytes;
  }
  EXPECT_EQ(total, (32 * 9 + 128 * 9216 + 10) * 4u);
}

TEST(ShardPlanTest, NeverSplitsScalarsOrSingleRowsAndNoMoreThanRows) {
  auto plan = PlanShards(Keys({{}, {1, 100000}, {3, 100000}}), 4, 16);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->slices.size(), 5u);  // scalar, 1 row, 3 rows
  EXPECT_TRUE(plan->slices[0].whole);
  EXPECT_EQ(plan->slices[0].row_end, 1);
  EXPECT_TRUE(plan->slices[1].whole);
  EXPECT_EQ(plan->slices[4].row_begin, 2);
}

TEST(ShardPlanTest, RefusesBadArguments) {
  EXPECT_EQ(PlanShards(Keys({{4}}), 0, 16).status().message(),
            "--num_servers 0: expected >= 1");
  EXPECT_EQ(PlanShards(Keys({{4}}), 2, 0).status().message(),
            "--slice_bytes 0: expected > 0");
}

// What a worker exchanges with server s and what server s steps are views
// of the same bytes as the whole parameters.
TEST(ShardPlanTest, SlicesShareTheParametersStorage) {
  torch::manual_seed(1);
  auto model = models::MakeModel("mlp");
  ASSERT_TRUE(model.ok());
  auto params = (*model)->parameters();
  auto plan = PlanShards(Fingerprint(**model), 2, 64 * 1024);
  ASSERT_TRUE(plan.ok());
  size_t seen = 0;
  for (int s = 0; s < 2; ++s) {
    auto views = SliceViews(*plan, s, params);
    auto leaves = SliceLeaves(*plan, s, params);
    ASSERT_EQ(views.size(), plan->by_server[s].size());
    for (size_t i = 0; i < views.size(); ++i) {
      EXPECT_TRUE(views[i].is_contiguous());
      EXPECT_EQ(views[i].data_ptr(), leaves[i].data_ptr());
      EXPECT_TRUE(leaves[i].is_leaf());
      EXPECT_TRUE(leaves[i].requires_grad());
      torch::NoGradGuard no_grad;
      leaves[i].fill_(static_cast<float>(s + 1));
    }
    seen += views.size();
  }
  EXPECT_EQ(seen, plan->slices.size());
  // Every element now holds its server's mark, through the whole tensors.
  for (const Slice& sl : plan->slices) {
    auto rows = params[sl.key].detach().narrow(0, sl.row_begin,
                                               sl.row_end - sl.row_begin);
    EXPECT_TRUE(rows.eq(static_cast<float>(sl.server + 1)).all().item<bool>());
  }
}

}  // namespace
}  // namespace pstrain::ps
