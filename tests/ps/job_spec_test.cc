#include "ps/job_spec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pstrain::ps {
namespace {

TEST(JobSpecTest, JsonRoundTrip) {
  JobSpec s;
  s.model = "mlp";
  s.mode = Mode::kAsync;
  s.lr = 0.125;
  s.batch_size = 7;
  s.seed = 42;
  s.world_size = 5;
  auto back = JobSpecFromJson(nlohmann::json::parse(ToJson(s).dump()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(ToJson(*back), ToJson(s));
  EXPECT_EQ(back->mode, Mode::kAsync);
  EXPECT_EQ(back->num_workers(), 4);
}

TEST(JobSpecTest, MissingFieldIsNamed) {
  auto j = ToJson(JobSpec{});
  j.erase("lr");
  auto r = JobSpecFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("lr"), std::string::npos);
}

TEST(JobSpecTest, ValidationNamesTheFlag) {
  JobSpec s;
  EXPECT_TRUE(ValidateJobSpec(s).ok());
  s.lr = -1;
  EXPECT_EQ(ValidateJobSpec(s).message(), "--lr -1.000000: expected > 0");
  s = JobSpec{};
  s.batch_size = 0;
  EXPECT_EQ(ValidateJobSpec(s).message(), "--batch_size 0: expected >= 1");
  EXPECT_EQ(ParseMode("ssp").status().message(), "--mode 'ssp': expected sync or async");
}

}  // namespace
}  // namespace pstrain::ps
