// bench wire end to end on loopback: over shared memory each case says how
// its ends waited, over TCP it has no waits, and a sync server's cases
// name the version they push for.

#include "bench/wire_bench.h"

#include <gtest/gtest.h>

namespace pstrain::bench {
namespace {

WireBenchOptions Small() {
  WireBenchOptions o;
  o.sizes = {4096};
  o.workers = {1};
  o.ops = {"pull"};
  o.seconds_per_case = 0.05;
  o.codecs = {};
  return o;
}

const nlohmann::json& CaseOver(const nlohmann::json& result,
                               const std::string& transport) {
  for (const auto& c : result["cases"]) {
    if (c["transport"] == transport)
      return c;
  }
  ADD_FAILURE() << "no case over " << transport;
  return result;
}

TEST(WireBenchTest, ShmCasesCountTheirWaitsAndTcpCasesHaveNone) {
  Result<nlohmann::json> r = RunWireBench(Small());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const nlohmann::json& shm = CaseOver(*r, "shm")["worker_waits"];
  // A pull is the request written (one write) and the reply read: its
  // head, its meta, and its data (a read each, or more).
  EXPECT_GE(shm["stream_ops_per_op"].get<double>(), 4.0);
  EXPECT_LE(shm["stream_ops_per_op"].get<double>(), 8.0);
  EXPECT_GE(shm["looks_per_op"].get<double>(), 0.0);
  EXPECT_GT(
      CaseOver(*r, "shm")["server_waits"]["stream_ops_per_op"].get<double>(),
      1.0);
  const nlohmann::json& tcp = CaseOver(*r, "tcp")["worker_waits"];
  EXPECT_EQ(tcp["stream_ops_per_op"].get<double>(), 0.0);
  EXPECT_EQ(tcp["looks_per_op"].get<double>(), 0.0);
}

TEST(WireBenchTest, ASyncServerTakesPushPullsForItsVersion) {
  WireBenchOptions o = Small();
  o.mode = "sync";
  o.ops = {"pull", "push_pull"};
  o.transports = {"shm"};
  Result<nlohmann::json> r = RunWireBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["mode"], "sync");
  ASSERT_EQ((*r)["cases"].size(), 2u);
  EXPECT_GE((*r)["cases"][1]["ops"].get<uint64_t>(), 5u);
  o.ops = {"push"};
  Result<nlohmann::json> push = RunWireBench(o);
  EXPECT_EQ(push.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(push.status().message(),
            "--op push with --mode sync: expected pull or push_pull (a "
            "worker's next push waits for every worker's)");
}

}  // namespace
}  // namespace pstrain::bench
