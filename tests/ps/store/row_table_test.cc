#include "ps/store/row_table.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pstrain::ps {
namespace {

RowTableOptions Options(int64_t dim, RowUpdate update) {
  RowTableOptions o;
  o.dim = dim;
  o.init_bound = 0.25;
  o.seed = 7;
  o.table = 3;
  o.update = update;
  return o;
}

torch::Tensor Ids(std::vector<int64_t> ids) {
  return torch::tensor(ids, torch::kLong);
}

torch::Tensor Initial(const RowTable& table, int64_t id) {
  torch::Tensor row = torch::empty({table.options().dim}, torch::kFloat);
  table.InitialRow(id, row.data_ptr<float>());
  return row;
}

TEST(RowTableTest, RowsAreMadeOnFirstTouchFromTheirIdAlone) {
  RowTable table(Options(8, RowUpdate::kSgd));
  EXPECT_EQ(table.rows(), 0);
  EXPECT_EQ(table.bytes(), 1024u * 4);  // the empty index only
  const torch::Tensor got = table.Gather(Ids({5, 900000000000, 5, 12}));
  EXPECT_EQ(table.rows(), 3);
  ASSERT_EQ(got.sizes(), (std::vector<int64_t>{4, 8}));
  EXPECT_TRUE(torch::equal(got[0], got[2]));
  EXPECT_TRUE(torch::equal(got[1], Initial(table, 900000000000)));
  EXPECT_LE(got.abs().max().item<float>(), 0.25f);
  EXPECT_FALSE(torch::equal(got[0], got[3]));

  // Another table touched in another order makes the same rows; another
  // table index or seed, other rows.
  RowTable again(Options(8, RowUpdate::kSgd));
  const torch::Tensor reversed = again.Gather(Ids({12, 900000000000, 5}));
  EXPECT_TRUE(torch::equal(reversed[2], got[0]));
  EXPECT_TRUE(torch::equal(reversed[0], got[3]));
  RowTableOptions other = Options(8, RowUpdate::kSgd);
  other.table = 4;
  RowTable neighbour(other);
  EXPECT_FALSE(torch::equal(neighbour.Gather(Ids({5}))[0], got[0]));
}

TEST(RowTableTest, InitialRowsAreUniformOverTheBound) {
  RowTable table(Options(4, RowUpdate::kSgd));
  std::vector<int64_t> ids(20000);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<int64_t>(i) * 7919;
  const torch::Tensor rows = table.Gather(Ids(ids));
  // U(-0.25, 0.25): mean 0, variance 0.5^2 / 12.
  EXPECT_NEAR(rows.mean().item<double>(), 0, 0.005);
  EXPECT_NEAR(rows.var().item<double>(), 0.25 / 12, 0.001);
  EXPECT_GE(rows.min().item<float>(), -0.25f);
  EXPECT_LT(rows.max().item<float>(), 0.25f);
}

TEST(RowTableTest, ManyRowsSurviveTheIndexGrowingAndCostLittleBeyondTheirOwn) {
  RowTable table(Options(32, RowUpdate::kRowwiseAdagrad));
  const int64_t n = 5 * RowTable::kChunkRows;
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ids[static_cast<size_t>(i)] = i * 1000003 + 17;
  table.Gather(Ids(ids));
  EXPECT_EQ(table.rows(), n);
  const torch::Tensor again =
      table.Gather(Ids({ids[0], ids[70000], ids.back()}));
  EXPECT_TRUE(torch::equal(again[0], Initial(table, ids[0])));
  EXPECT_TRUE(torch::equal(again[1], Initial(table, ids[70000])));
  EXPECT_TRUE(torch::equal(again[2], Initial(table, ids.back())));
  EXPECT_EQ(table.rows(), n);
  // Rows and sums: 33 floats a row; the IDs and index at most 18 bytes more.
  const double own = static_cast<double>(n) * 33 * 4;
  EXPECT_GE(static_cast<double>(table.bytes()), own);
  EXPECT_LE(static_cast<double>(table.bytes()), own + n * 18.0);
}

TEST(RowTableTest, RowwiseAdagradMovesOnlyTheNamedRows) {
  RowTableOptions o = Options(3, RowUpdate::kRowwiseAdagrad);
  o.eps = 1e-8;
  RowTable table(o);
  const torch::Tensor before = table.Gather(Ids({1, 2}));
  const torch::Tensor g1 = torch::tensor({{0.5f, -1.0f, 2.0f}});
  const torch::Tensor g2 = torch::tensor({{-0.25f, 0.0f, 1.0f}});
  table.Apply(Ids({1}), g1, 0.1);
  table.Apply(Ids({1}), g2, 0.1);
  // By hand, in double: the sum is the mean of the squares, one a row.
  const torch::Tensor w0 = before[0].to(torch::kDouble);
  const double s1 = (0.25 + 1 + 4) / 3.0;
  const double s2 = s1 + (0.0625 + 0 + 1) / 3.0;
  const torch::Tensor want =
      w0 - 0.1 * g1[0].to(torch::kDouble) / (std::sqrt(s1) + 1e-8) -
      0.1 * g2[0].to(torch::kDouble) / (std::sqrt(s2) + 1e-8);
  const torch::Tensor after = table.Gather(Ids({1, 2}));
  EXPECT_LE((after[0].to(torch::kDouble) - want).abs().max().item<double>(),
            1e-6);
  EXPECT_TRUE(torch::equal(after[1], before[1]));  // untouched
  // A row first seen in Apply is made, then moved.
  table.Apply(Ids({40}), g1, 0.1);
  EXPECT_EQ(table.rows(), 3);
  EXPECT_FALSE(torch::equal(table.Gather(Ids({40}))[0], Initial(table, 40)));
}

TEST(RowTableTest, SgdStepsByTheGradient) {
  RowTable table(Options(2, RowUpdate::kSgd));
  const torch::Tensor before = table.Gather(Ids({9}));
  table.Apply(Ids({9}), torch::tensor({{1.0f, -2.0f}}), 0.5);
  EXPECT_TRUE(torch::allclose(table.Gather(Ids({9})),
                              before - torch::tensor({{0.5f, -1.0f}})));
}

TEST(RowTableTest, BadInputThrows) {
  RowTable table(Options(2, RowUpdate::kSgd));
  EXPECT_THROW(table.Gather(Ids({-1})), std::invalid_argument);
  EXPECT_THROW(table.Gather(torch::zeros({2}, torch::kInt)),
               std::invalid_argument);
  EXPECT_THROW(table.Apply(Ids({1, 2}), torch::zeros({2, 3}), 0.1),
               std::invalid_argument);
  EXPECT_THROW(RowTable(Options(0, RowUpdate::kSgd)), std::invalid_argument);
}

}  // namespace
}  // namespace pstrain::ps
