#include "ps/engine/finite_check.h"

#include <cstring>
#include <limits>
#include <vector>

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

// Pushed bytes may be checked where they lie in a shared-memory ring, at
// any offset (in_place_ubsan_test runs this under UBSan).
TEST(FiniteCheckTest, ChecksValuesAtAnyAlignment) {
  std::vector<char> ring(4 * 100 + 3);
  std::vector<float> v(100, 1.0f);
  std::memcpy(ring.data() + 3, v.data(), 400);
  EXPECT_TRUE(AllFinite(ring.data() + 3, 400, torch::kFloat));
  v[99] = std::numeric_limits<float>::infinity();
  std::memcpy(ring.data() + 3, v.data(), 400);
  EXPECT_FALSE(AllFinite(ring.data() + 3, 400, torch::kFloat));
}

}  // namespace
}  // namespace pstrain::ps
