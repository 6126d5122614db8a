// bench/chaos.py for two minutes: one fault at a time (SIGKILL of any
// server, the master included; SIGSTOP for three times --dead_after of
// one other than the master) at random server ranks and random moments
// of a sync job under launch --replicas 2
// --restart_servers; the job recovers from each, ends with exit 0 and a
// checkpoint, every push is applied once, no worker sees its version go
// back, and the final parameters equal the run without faults, bit for bit.

#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "job_test.h"

namespace pstrain::testing {
namespace {

TEST(ChaosTest, TwoMinutesOfServerFaultsChangeNothing) {
  const int seed = std::random_device{}() % 1000;
  SCOPED_TRACE("bench/chaos.py --seed " + std::to_string(seed));
  Process chaos({"/usr/bin/python3",
                 std::string(PSTRAIN_SOURCE_DIR) + "/bench/chaos.py",
                 "--pstrain", PstrainBin(), "--minutes", "2", "--seed",
                 std::to_string(seed)});
  auto r = chaos.Wait(580);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Its last line: the run's figures and whether every invariant held.
  const std::string out = r.out.substr(0, r.out.find_last_not_of('\n') + 1);
  const auto end = nlohmann::json::parse(out.substr(out.rfind('\n') + 1));
  EXPECT_TRUE(end["invariants_held"].get<bool>()) << r.out << r.err;
  EXPECT_TRUE(end["bit_for_bit"].get<bool>()) << end;
  EXPECT_EQ(end["workers_lost"], 0) << end;
  EXPECT_EQ(end["checkpoint_version"], end["steps"]) << end;
  // The first fault comes at most 9 s after the first step, and the run
  // is two minutes of this machine's steps.
  EXPECT_GE(end["faults"].get<int>(), 1) << r.out;
}

}  // namespace
}  // namespace pstrain::testing
