#include "bench/data_bench.h"

#include <gtest/gtest.h>

#include "testing/idx_files.h"
#include "testing/image_files.h"

namespace pstrain::bench {
namespace {

TEST(DataBenchTest, ReportsEveryPhaseOfAnImageFolder) {
  data::testing::ScratchDir dir;
  data::testing::WriteImageFolder(dir.path(), {"a", "b"}, 3, 40, false);
  DataBenchOptions o;
  o.data_dir = dir.path();
  o.image_size = 32;
  o.threads = 2;
  o.samples = 10;
  auto r = RunDataBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["threads"], 2);
  EXPECT_EQ((*r)["image_size"], 32);
  EXPECT_EQ((*r)["files"], 6);
  EXPECT_EQ((*r)["read"]["images"], 6);
  EXPECT_GT((*r)["read"]["bytes_per_second"].get<double>(), 0);
  for (const char* phase : {"decode", "train", "eval"}) {
    EXPECT_EQ((*r)[phase]["images"], 10) << phase;
    EXPECT_GT((*r)[phase]["images_per_second_per_thread"].get<double>(), 0)
        << phase;
  }
  EXPECT_EQ((*r)["train"]["skipped"], 0);
  EXPECT_TRUE(r->contains("train_over_decode"));
}

TEST(DataBenchTest, BadOptionsAndMissingFolders) {
  DataBenchOptions o;
  o.threads = 0;
  EXPECT_EQ(RunDataBench(o).status().code(), StatusCode::kInvalidArgument);
  o.threads = 1;
  o.data_dir = "/nonexistent/pstrain-data";
  EXPECT_EQ(RunDataBench(o).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace pstrain::bench
