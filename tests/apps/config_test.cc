// --config FILE gives the same job as the same flags; flags on the command
// line win; --print_config shows the effective flags.

#include <fstream>

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

const std::string kExample =
    std::string(PSTRAIN_SOURCE_DIR) + "/share/examples/job.toml";

// The flags share/examples/job.toml sets, as a command line.
const std::vector<std::string> kExampleFlags = {
    "--model",        "mlp",  "--dataset",   "fashion-mnist",
    "--mode",         "sync", "--optimizer", "sgd",
    "--lr",           "0.05", "--momentum",  "0.9",
    "--batch_size",   "32",   "--epochs",    "1",
    "--max_steps",    "40",   "--seed",      "7",
    "--log_interval", "5"};

std::string PrintConfig(std::vector<std::string> args) {
  args.push_back("--print_config");
  auto r = RunPstrain(args, 30);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(ConfigTest, ExampleFileEqualsItsFlags) {
  const std::string from_file = PrintConfig({"serve", "--config", kExample});
  EXPECT_EQ(from_file, PrintConfig(Concat({"serve"}, kExampleFlags)));
  EXPECT_NE(from_file.find("\nmodel=\"mlp\"\n"), std::string::npos)
      << from_file;
  EXPECT_NE(from_file.find("\nmax_steps=40\n"), std::string::npos) << from_file;
  // The example changes the defaults, so the comparison above can fail.
  EXPECT_NE(from_file, PrintConfig({"serve"}));
}

TEST(ConfigTest, CommandLineWinsOverTheFile) {
  const std::string out =
      PrintConfig({"serve", "--config", kExample, "--lr", "0.5"});
  EXPECT_NE(out.find("\nlr=0.5\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nseed=7\n"), std::string::npos) << out;
}

TEST(ConfigTest, PrintedConfigReadsBack) {
  ScratchDir dir;
  std::ofstream(dir.File("printed.toml"))
      << PrintConfig(Concat({"launch", "--world_size", "4"}, kExampleFlags));
  EXPECT_EQ(
      PrintConfig({"launch", "--config", dir.File("printed.toml")}),
      PrintConfig(Concat({"launch", "--world_size", "4"}, kExampleFlags)));
}

TEST(ConfigTest, MissingOrBadFileIsBadInput) {
  auto r = RunPstrain({"serve", "--config", "/nonexistent/job.toml"}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/job.toml"), std::string::npos) << r.err;
  ScratchDir dir;
  std::ofstream(dir.File("bad.toml")) << "no_such_flag = 3\n";
  r = RunPstrain({"serve", "--config", dir.File("bad.toml")}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no_such_flag"), std::string::npos) << r.err;
}

// The same job given by a file and by flags trains the same model.
TEST(ConfigTest, JobFromFileTrainsLikeTheSameFlags) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  std::ofstream(dir.File("job.toml"))
      << "model = \"mlp\"\nbatch_size = 8\nmax_steps = 12\nlr = 0.05\nseed = "
         "5\n"
      << "data_dir = \"" << dir.path()
      << "\"\nworld_size = 3\nmaster_port = 0\n"
      << "checkpoint = \"" << dir.File("file.pt") << "\"\n";
  auto from_file =
      RunPstrain({"launch", "--config", dir.File("job.toml"), "--json"}, 120);
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  auto from_flags = RunPstrain({"launch",
                                "--model",
                                "mlp",
                                "--batch_size",
                                "8",
                                "--max_steps",
                                "12",
                                "--lr",
                                "0.05",
                                "--seed",
                                "5",
                                "--data_dir",
                                dir.path(),
                                "--world_size",
                                "3",
                                "--master_port",
                                "0",
                                "--checkpoint",
                                dir.File("flags.pt"),
                                "--json"},
                               120);
  ASSERT_EQ(from_flags.exit_code, 0) << from_flags.err;
  EXPECT_EQ(FindEvent(from_file.out, "summary")["steps"], 12);
  EXPECT_EQ(FindEvent(from_file.out, "listen")["job"],
            FindEvent(from_flags.out, "listen")["job"]);
  EXPECT_EQ(MaxAbsDiff(dir.File("file.pt"), dir.File("flags.pt")), 0.0);
}

}  // namespace
}  // namespace pstrain::testing
