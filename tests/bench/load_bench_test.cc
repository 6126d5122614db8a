#include "bench/load_bench.h"

#include <gtest/gtest.h>

namespace pstrain::bench {
namespace {

// A short `pstrain bench load`: every acknowledged push is
// applied exactly once, and memory does not grow once all connections run.
TEST(LoadBenchTest, SixteenConnectionsLoseNothingAndStayBounded) {
  LoadBenchOptions o;
  o.connections = 16;
  o.bytes = 1 << 20;
  o.seconds = 3;
  auto r = RunLoadBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->acked_pushes, 16u);  // every connection pushed
  EXPECT_EQ(r->applied_pushes, r->acked_pushes);
  EXPECT_EQ(r->server_version, r->acked_pushes);
  EXPECT_EQ(r->refused_pushes, 0u);
  EXPECT_TRUE(r->exact());
  // After the first quarter the buffers of every connection exist; the rest
  // of the run may not keep growing (64 MiB of slack for allocator noise).
  EXPECT_LE(r->peak_rss, r->rss_after_quarter + (uint64_t{64} << 20))
      << r->rss_after_quarter << " -> " << r->peak_rss;
}

TEST(LoadBenchTest, RefusesBadOptions) {
  LoadBenchOptions o;
  o.connections = 0;
  EXPECT_EQ(RunLoadBench(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pstrain::bench
