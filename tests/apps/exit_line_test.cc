// However a process ends in error, it says why in one line and exits with
// the documented status: 2 for a bad job spec from rank 0 (bad input), 1 for
// an exception nothing caught before main (libtorch's, the standard
// library's, anything), whose multi-line what() shrinks to its first line.

#include <sstream>

#include <gtest/gtest.h>

#include "job_test.h"
#include "ps/job/job_spec.h"
#include "testing/fake_master.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// The lines of `err` that begin "pstrain: error: ".
std::vector<std::string> ErrorLines(const std::string& err) {
  std::vector<std::string> lines;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("pstrain: error: ", 0) == 0)
      lines.push_back(line);
  }
  return lines;
}

TEST(ExitLineTest, BadJobSpecFromRankZeroIsBadInput) {
  ps::JobSpec spec;
  spec.world_size = 2;
  nlohmann::json job = ps::ToJson(spec);
  job["log_interval"] = 0;  // the worker would divide by it
  FakeMaster master(job.dump());
  auto r = RunPstrain(
      {"work", "--rank", "1", "--world_size", "2", "--master_addr", "127.0.0.1",
       "--master_port", std::to_string(master.port()), "--timeout", "20"},
      60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(ErrorLines(r.err),
            std::vector<std::string>{
                "pstrain: error: the job spec from rank 0: --log_interval 0: "
                "expected >= 1"})
      << r.err;
}

class UncaughtTest
    : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

// A worker of pstrain_testing throws at its first step (--throw_in_step).
TEST_P(UncaughtTest, ExceptionReachingMainIsOneLineAndExitOne) {
  const auto& [kind, line] = GetParam();
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 320, 50);
  auto world = [&](int port) {
    return std::vector<std::string>{"--world_size",  "2",
                                    "--master_addr", "127.0.0.1",
                                    "--master_port", std::to_string(port),
                                    "--data_dir",    dir.path()};
  };
  Process serve(
      Concat({PstrainBin(), "serve", "--model", "mlp", "--batch_size", "8",
              "--max_steps", "10", "--checkpoint", dir.File("m.pt")},
             world(0)));
  const int port = serve.ListenPort(30);
  auto r = Process(Concat({PstrainTestingBin(), "work", "--rank", "1", "--json",
                           "--throw_in_step", kind},
                          world(port)))
               .Wait(60);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(ErrorLines(r.err),
            std::vector<std::string>{"pstrain: error: uncaught " + line})
      << r.err;
  EXPECT_EQ(r.err.find("Exception raised from"), std::string::npos)
      << r.err;  // no backtrace
  // With --json the last event is the error.
  const std::string last =
      r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  auto error = nlohmann::json::parse(last, nullptr, false);
  ASSERT_TRUE(error.is_object()) << r.out;
  EXPECT_EQ(error.value("event", ""), "error") << r.out;
  EXPECT_EQ(error.value("exit_status", 0), 1) << r.out;
  EXPECT_EQ(error.value("rank", -1), 1) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, UncaughtTest,
    ::testing::Values(
        std::make_pair(
            "c10", "c10::Error: a libtorch error thrown by --throw_in_step"),
        std::make_pair(
            "std", "std::out_of_range: an exception thrown by --throw_in_step"),
        std::make_pair("int", "int")),
    [](const auto& info) { return info.param.first; });

}  // namespace
}  // namespace pstrain::testing
