#include "bench/table.h"

#include <cmath>

#include <gtest/gtest.h>

namespace pstrain::bench {
namespace {

TEST(BenchTableTest, AlignsFirstColumnLeftAndTheOthersRight) {
  std::string t =
      FormatTable({"mode", "samples/s", "acc"},
                  {{"single", "812", "0.7"}, {"sync", "1530", "0.71"}});
  EXPECT_EQ(t,
            "mode    samples/s   acc\n"
            "-----------------------\n"
            "single        812   0.7\n"
            "sync         1530  0.71\n");
}

TEST(BenchTableTest, PadsShortRowsAndDropsExtraCells) {
  std::string t = FormatTable({"a", "b"}, {{"x"}, {"y", "1", "ignored"}});
  EXPECT_EQ(t,
            "a  b\n"
            "----\n"
            "x\n"
            "y  1\n");
}

TEST(BenchTableTest, HeaderOnlyWhenNoRows) {
  EXPECT_EQ(FormatTable({"op", "size"}, {}), "op  size\n--------\n");
}

TEST(BenchTableTest, FixedDecimalsRoundsAndShowsNanAsDash) {
  EXPECT_EQ(FixedDecimals(12.345, 2), "12.35");
  EXPECT_EQ(FixedDecimals(1530.4, 0), "1530");
  EXPECT_EQ(FixedDecimals(std::nan(""), 3), "-");
}

TEST(BenchTableTest, FormatSizeUsesBinaryUnitsLikeTheSizesFlag) {
  EXPECT_EQ(FormatSize(512), "512 B");
  EXPECT_EQ(FormatSize(4096), "4 KiB");
  EXPECT_EQ(FormatSize(65536), "64 KiB");
  EXPECT_EQ(FormatSize(1 << 20), "1 MiB");
  EXPECT_EQ(FormatSize(5033984), "4.8 MiB");
  EXPECT_EQ(FormatSize(uint64_t{64} << 20), "64 MiB");
  EXPECT_EQ(FormatSize(uint64_t{3} << 29), "1.5 GiB");
}

}  // namespace
}  // namespace pstrain::bench
