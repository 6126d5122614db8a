#include "ps/engine/finite_check.h"

#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pstrain::ps {
namespace {

TEST(FiniteCheckTest, FindsNanAndInfAnywhereInFloatAndDouble) {
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    auto t = torch::ones({1000}, dtype);
    EXPECT_TRUE(AllFinite(t.data_ptr(), t.nbytes(), t.scalar_type()));
    for (double bad : {std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity(),
                       -std::numeric_limits<double>::infinity()}) {
      for (int64_t at : {0, 517, 999}) {
        auto u = t.clone();
        u[at] = bad;
        EXPECT_FALSE(AllFinite(u.data_ptr(), u.nbytes(), u.scalar_type()))
            << bad << " at " << at;
        // Only the bytes asked about count.
        EXPECT_EQ(
            AllFinite(u.data_ptr(), at * u.element_size(), u.scalar_type()),
            true);
      }
    }
  }
}

}  // namespace
}  // namespace pstrain::ps
