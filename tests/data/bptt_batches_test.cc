#include "data/bptt_batches.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pstrain::data {
namespace {

TEST(BpttBatchesTest, BatchifyLaysStreamsSideBySide) {
  auto b = Batchify(torch::arange(11, torch::kInt64), 3);
  EXPECT_TRUE(b.equal(torch::tensor({0, 3, 6, 1, 4, 7, 2, 5, 8}).view({3, 3})));
}

TEST(BpttBatchesTest, WindowsAndShiftedTargets) {
  auto b = Batchify(torch::arange(24, torch::kInt64), 2);  // rows 12
  BpttBatches all(b, 0, 2, 5);
  ASSERT_EQ(all.size(), 3);  // rows 0-4, 5-9, 10 (targets up to row 11)
  EXPECT_EQ(all.tokens(), 22);
  auto w = all.Get(2);
  EXPECT_TRUE(w.input.equal(torch::tensor({10, 22}).view({1, 2})));
  EXPECT_TRUE(w.target.equal(torch::tensor({11, 23})));
  auto w0 = all.Get(0);
  EXPECT_EQ(w0.input.sizes(), (std::vector<int64_t>{5, 2}));
  EXPECT_TRUE(w0.target.slice(0, 0, 2).equal(torch::tensor({1, 13})));
}

TEST(BpttBatchesTest, WorkersColumnsMakeTheWholeBatch) {
  auto b = Batchify(torch::arange(40, torch::kInt64), 4);
  BpttBatches whole(b, 0, 4, 3), first(b, 0, 2, 3), second(b, 2, 2, 3);
  ASSERT_EQ(first.size(), whole.size());
  for (int64_t i = 0; i < whole.size(); ++i) {
    auto w = whole.Get(i);
    EXPECT_TRUE(w.input.equal(
        torch::cat({first.Get(i).input, second.Get(i).input}, 1)));
  }
}

}  // namespace
}  // namespace pstrain::data
