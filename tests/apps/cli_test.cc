// The subcommands `pstrain --help` lists are the ones the shell completion
// and the man page know; bad flags are refused in one line.

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include <gtest/gtest.h>

#include "job_test.h"

namespace pstrain::testing {
namespace {

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(PSTRAIN_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in) << relative;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Subcommand names from CLI11's "Subcommands:" section of --help.
std::vector<std::string> Subcommands(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help.substr(help.find("Subcommands:")));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && !line.empty()) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    if (!name.empty())
      names.push_back(name);
  }
  return names;
}

TEST(CliTest, HelpCompletionAndManPageListTheSameSubcommands) {
  auto r = RunPstrain({"--help"}, 30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto names = Subcommands(r.out);
  EXPECT_EQ(names, (std::vector<std::string>{"serve", "work", "launch", "eval",
                                             "bench", "run", "report",
                                             "completions", "man"}));
  const std::string completion = ReadSource("completions/pstrain.bash");
  const std::string man = ReadSource("man/pstrain.1");
  for (const auto& name : names) {
    EXPECT_NE(completion.find(name + ")"), std::string::npos) << name;
    EXPECT_NE(man.find(".B pstrain " + name), std::string::npos) << name;
  }
}

TEST(CliTest, VersionNamesTheProtocol) {
  auto r = RunPstrain({"--version"}, 30);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("pstrain 0.1.0 (protocol 12)"), std::string::npos)
      << r.out;
}

TEST(CliTest, VersionNamesLibtorchAndCuda) {
  auto r = RunPstrain({"--version"}, 30);
  EXPECT_EQ(r.exit_code, 0);
  // Debian's libtorch is CPU-only.
  EXPECT_NE(r.out.find("\nlibtorch 1.13"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", CUDA available: no\n"), std::string::npos) << r.out;
}

// The knobs that slow, hold or swap a worker belong to the test-only
// pstrain_testing; the shipped binary refuses them as unknown flags.
TEST(CliTest, NoTestKnobShipsInTheBinary) {
  const std::vector<std::vector<std::string>> knobs = {
      {"work", "--rank", "1", "--world_size", "2", "--delay_ms", "5"},
      {"work", "--rank", "1", "--world_size", "2", "--model_override", "mlp"},
      {"work", "--rank", "1", "--world_size", "2", "--throw_in_step", "std"},
      {"work", "--rank", "1", "--world_size", "2", "--hold_until", "go"},
      {"launch", "--delay_rank", "1", "--delay_ms", "5"},
      {"launch", "--hold_until", "go"}};
  for (const auto& args : knobs) {
    auto r = RunPstrain(args, 30);
    EXPECT_EQ(r.exit_code, 2) << args[args.size() - 2] << ": " << r.err;
    EXPECT_NE(r.err.find("pstrain: error: The following argument"),
              std::string::npos)
        << r.err;
  }
}

// Bad input of the two kinds the flags check alike: a negative value of an
// unsigned flag (which would wrap round to a huge number), and a flag that
// means nothing without another. One line each, exit status 2, before
// anything starts.
TEST(CliTest, ANegativeUnsignedOrALoneFlagIsOneLineAndExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"launch", "--send_window", "-1"},
       "pstrain: error: --send_window: -1 is negative, expected an unsigned "
       "integer (see pstrain --help)\n"},
      {{"launch", "--restart_servers"},
       "pstrain: error: --restart_servers: only with --replicas 2 or more\n"},
      {{"work", "--rank", "1", "--world_size", "2", "--metrics_linger", "3"},
       "pstrain: error: --metrics_linger: only with --metrics_port\n"},
      {{"serve", "--world_size", "2", "--keep", "2"},
       "pstrain: error: --keep: only with --checkpoint_every or --resume "
       "auto\n"}};
  for (const auto& [args, line] : bad) {
    auto r = RunPstrain(args, 30);
    EXPECT_EQ(r.exit_code, 2) << args[1];
    EXPECT_EQ(r.err, line);
  }
}

}  // namespace
}  // namespace pstrain::testing
