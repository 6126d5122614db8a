// RowSlices: a row-sparse table split over two servers gets one slot per
// slice; a batch's rows are split into each slice's own numbering and
// counted; the touched rows are gathered from the whole gradient.

#include "worker/row_slices.h"

#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pstrain::worker {
namespace {

using RowIds = std::vector<int64_t>;

// Model key 0, a table [6, 2], rows [0, 3) on server 0 and [3, 6) on
// server 1; key 1, [4], whole on server 0.
ps::ShardPlan TwoServerRowPlan() {
  ps::ShardPlan plan;
  plan.num_servers = 2;
  plan.slices = {
      {0, 0, 3, 24, 0, false}, {0, 3, 6, 24, 1, false}, {1, 0, 1, 16, 0, true}};
  plan.by_server = {{0, 2}, {1}};
  return plan;
}

struct RowModel {
  std::vector<at::Tensor> tables{torch::zeros({6, 2}), torch::zeros({4})};
  std::vector<at::Tensor> grads{torch::arange(12, torch::kFloat32).view({6, 2}),
                                torch::zeros({4})};
};

TEST(RowSlicesTest, PlansOneSlotPerSliceOfARowSparseKey) {
  RowModel m;
  RowSlices rows;
  EXPECT_TRUE(rows.empty());
  ASSERT_TRUE(rows.Plan(TwoServerRowPlan(), {true, false}, m.tables, m.grads,
                        ps::CompressionSpec{}));
  ASSERT_FALSE(rows.empty());
  ASSERT_EQ(rows.slots(0)->size(), 1u);
  ASSERT_EQ(rows.slots(1)->size(), 1u);
  EXPECT_EQ((*rows.slots(0))[0].key, 0u);  // server 0's first slice
  EXPECT_EQ((*rows.slots(0))[0].push_codec, wire::Codec::kRaw);
  EXPECT_TRUE(rows.Holds(0, 0));
  EXPECT_TRUE(rows.Holds(1, 0));
  EXPECT_FALSE(rows.Holds(0, 1));
}

TEST(RowSlicesTest, KeepsNoneWhenNoKeyIsRowSparse) {
  RowModel m;
  RowSlices rows;
  EXPECT_FALSE(rows.Plan(TwoServerRowPlan(), {false, false}, m.tables, m.grads,
                         ps::CompressionSpec{}));
  EXPECT_TRUE(rows.empty());
  EXPECT_FALSE(rows.Holds(0, 0));
}

TEST(RowSlicesTest, SplitsRowsOverSlicesAndGathersThem) {
  RowModel m;
  RowSlices rows;
  ASSERT_TRUE(rows.Plan(TwoServerRowPlan(), {true, false}, m.tables, m.grads,
                        ps::CompressionSpec{}));
  rows.SetRows(0, {1, 4, 5}, {0, 3}, m.grads, {});
  const SparseSlot& first = (*rows.slots(0))[0];
  const SparseSlot& second = (*rows.slots(1))[0];
  EXPECT_EQ(first.push_ids, (RowIds{1}));
  EXPECT_EQ(first.want_ids, (RowIds{0}));
  EXPECT_EQ(second.push_ids, (RowIds{1, 2}));  // model rows 4 and 5
  EXPECT_EQ(second.want_ids, (RowIds{0}));
  EXPECT_EQ(rows.rows_pushed(), 3u);
  EXPECT_EQ(rows.rows_pulled(), 2u);
  rows.GatherRows(m.grads, {});
  EXPECT_TRUE(torch::equal(first.push_rows, torch::tensor({{2.f, 3.f}})));
  EXPECT_TRUE(torch::equal(second.push_rows,
                           torch::tensor({{8.f, 9.f}, {10.f, 11.f}})));
  rows.SetRows(1, {0}, {0}, m.grads, {});  // not row-sparse: no slot
  EXPECT_EQ(rows.rows_pushed(), 3u);
}

TEST(RowSlicesTest, CodesRowsInFp16WhenTheJobDoes) {
  RowModel m;
  ps::CompressionSpec fp16;
  fp16.push = wire::Codec::kFp16;
  RowSlices rows;
  ASSERT_TRUE(
      rows.Plan(TwoServerRowPlan(), {true, false}, m.tables, m.grads, fp16));
  rows.SetRows(0, {4, 5}, {}, m.grads, fp16.params);
  const SparseSlot& second = (*rows.slots(1))[0];
  EXPECT_EQ(second.push_codec, wire::Codec::kFp16);
  ASSERT_EQ(second.push_record.size(), 8u);  // 4 halves
  rows.GatherRows(m.grads, fp16.params);
  // 8.0 in IEEE half is 0x4800, little-endian.
  EXPECT_EQ(second.push_record[0], 0x00);
  EXPECT_EQ(second.push_record[1], 0x48);
}

}  // namespace
}  // namespace pstrain::worker
