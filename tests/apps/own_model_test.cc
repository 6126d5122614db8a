// Process tests of a user's own TorchScript model (--model PATH) on a
// tensor data set (--dataset tensors): Python (Debian's python3-torch and
// python3-torchvision, through own_model_torch.py beside this file) scripts
// the models and writes the data, computes the single-process reference a
// sync run must equal, and loads pstrain's checkpoints into its modules.

#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"
#include "util/sha256.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// Runs own_model_torch.py with `args`; its stdout.
std::string Python(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {
      "/usr/bin/python3",
      std::string(PSTRAIN_SOURCE_DIR) + "/tests/apps/own_model_torch.py"};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = Process(argv).Wait(300);
  EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
  return r.out;
}

std::string FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Sha256Hex(std::string(std::istreambuf_iterator<char>(in), {}));
}

// The job of every test below, less what differs.
std::vector<std::string> Job(const std::string& module,
                             const std::string& data_dir) {
  return {"--model", module, "--dataset",    "tensors", "--data_dir", data_dir,
          "--seed",  "3",    "--batch_size", "8",       "--json"};
}

// The line of `text` that holds `needle`, or "" when none does.
std::string LineWith(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  if (at == std::string::npos)
    return "";
  const size_t begin = text.rfind('\n', at);
  const size_t end = text.find('\n', at);
  return text.substr(
      begin == std::string::npos ? 0 : begin + 1,
      end == std::string::npos ? std::string::npos : end - begin - 1);
}

// 20 sync steps of 2 workers of batch 8 are Python's 20 steps
// of the same module on the combined batch of 16.
TEST(OwnModelTest, SyncOfTwoWorkersEqualsPythonsSingleProcess) {
  ScratchDir dir;
  Python({"mlp", dir.File("mlp.pt"), "5", "20", "32", "4"});
  // float64 x: pstrain reads it as float32, as the reference does.
  Python({"data", dir.path(), "7", "640", "20", "4", "--x_dtype", "float64"});
  auto r =
      RunPstrain(Concat({"launch", "--world_size", "3", "--master_port", "0",
                         "--checkpoint", dir.File("sync.pt"), "--max_steps",
                         "20", "--lr", "0.05", "--momentum", "0.9",
                         // Python's reference steps at a constant lr.
                         "--lr_schedule", "constant"},
                        Job(dir.File("mlp.pt"), dir.path())),
                 180);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(FindEvent(r.out, "summary")["steps"], 20) << r.out;

  Python({"reference", dir.File("mlp.pt"), dir.path(), "20", "2", "8", "0.05",
          "0.9", "3", dir.File("reference.pt")});
  EXPECT_LT(std::stod(Python(
                {"compare", dir.File("sync.pt"), dir.File("reference.pt")})),
            1e-5);
  // The test can fail: training moved the parameters far beyond 1e-5.
  Python({"reference", dir.File("mlp.pt"), dir.path(), "0", "2", "8", "0.05",
          "0.9", "3", dir.File("initial.pt")});
  EXPECT_GT(std::stod(Python(
                {"compare", dir.File("sync.pt"), dir.File("initial.pt")})),
            1e-3);
  // The checkpoint is the module's state_dict: its 4 tensors, strict.
  EXPECT_EQ(Python({"load_mlp", dir.File("sync.pt"), "20", "32", "4"}), "4\n");
  // The .json beside it names the module by its bytes.
  std::ifstream meta(dir.File("sync.json"));
  const auto json = nlohmann::json::parse(meta);
  EXPECT_EQ(json["job"]["model_sha256"], FileSha256(dir.File("mlp.pt")));
}

// torchvision's resnet18, scripted, with its BatchNorm
// buffers; the checkpoint loads back into torchvision's module.
TEST(OwnModelTest, ScriptedResnet18TrainsAndLoadsIntoTorchvision) {
  ScratchDir dir;
  Python({"resnet18", dir.File("resnet18.pt")});
  Python({"images", dir.path(), "3", "48"});
  auto r = RunPstrain(Concat({"launch", "--world_size", "3", "--master_port",
                              "0", "--checkpoint", dir.File("resnet.pt"),
                              "--max_steps", "3", "--lr", "0.01"},
                             Job(dir.File("resnet18.pt"), dir.path())),
                      300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(FindEvent(r.out, "summary")["steps"], 3) << r.out;
  // 62 parameters, 60 BatchNorm buffers (num_batches_tracked among them).
  EXPECT_EQ(Python({"load_resnet18", dir.File("resnet.pt")}), "122\n");
}

// A worker needs no copy of the module (rank 0 sends the
// bytes); one given a copy of its own must give rank 0's bytes.
TEST(OwnModelTest, WorkersTakeRank0sModuleAndACopyMustBeTheSame) {
  ScratchDir rank0, workers;
  Python({"mlp", rank0.File("mlp.pt"), "5", "20", "32", "4"});
  Python({"data", workers.path(), "7", "320", "20", "4"});
  std::filesystem::copy_file(rank0.File("mlp.pt"), workers.File("same.pt"));
  Python({"mlp", workers.File("other.pt"), "6", "20", "32", "4"});
  // Rank 0 reads mlp.pt from its own folder; the workers run in another,
  // where that name is no file.
  auto in = [](const ScratchDir& dir, const std::vector<std::string>& args) {
    std::string command =
        "cd '" + dir.path() + "' && exec '" + PstrainBin() + "'";
    for (const std::string& a : args)
      command += " '" + a + "'";
    return std::vector<std::string>{"/bin/sh", "-c", command};
  };
  auto serve = [&](int world_size) {
    return std::make_unique<Process>(in(
        rank0, Concat({"serve", "--rank", "0", "--world_size",
                       std::to_string(world_size), "--master_port", "0",
                       "--max_steps", "5", "--checkpoint", rank0.File("m.pt")},
                      Job("mlp.pt", workers.path()))));
  };
  auto work = [&](int rank, int world_size, int port,
                  std::vector<std::string> extra) {
    return std::make_unique<Process>(in(
        workers,
        Concat({"work", "--rank", std::to_string(rank), "--world_size",
                std::to_string(world_size), "--master_port",
                std::to_string(port), "--data_dir", workers.path(), "--json"},
               extra)));
  };
  {
    auto server = serve(3);
    const int port = server->ListenPort(60);
    auto bare = work(1, 3, port, {});
    auto copy = work(2, 3, port, {"--model", "same.pt"});
    auto rs = server->Wait(120);
    ASSERT_EQ(rs.exit_code, 0) << rs.err;
    auto rb = bare->Wait(30), rc = copy->Wait(30);
    ASSERT_EQ(rb.exit_code, 0) << rb.err;
    ASSERT_EQ(rc.exit_code, 0) << rc.err;
    EXPECT_NE(rb.err.find("took the module mlp.pt"), std::string::npos)
        << rb.err;
    EXPECT_EQ(FindEvent(rb.out, "summary")["steps"], 5) << rb.out;
    EXPECT_EQ(FindEvent(rc.out, "summary")["steps"], 5) << rc.out;
  }
  auto server = serve(2);
  const int port = server->ListenPort(60);
  auto r = work(1, 2, port, {"--model", "other.pt"})->Wait(60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const std::string line = LineWith(r.err, "other.pt");
  EXPECT_NE(line.find(FileSha256(workers.File("other.pt"))), std::string::npos)
      << r.err;
  EXPECT_NE(line.find(FileSha256(rank0.File("mlp.pt"))), std::string::npos)
      << r.err;
}

// Bad input ends the job with exit status 2 and one line
// that names the file and what was expected.
struct BadInputCase {
  std::string name;
  // own_model_torch.py commands writing DIR's files (DIR replaced).
  std::vector<std::vector<std::string>> write;
  std::string module;  // in DIR
  std::vector<std::string> flags;
  std::vector<std::string> message;  // parts of one line
};

// gtest prints a case by its name (in ctest's list too), not its bytes.
void PrintTo(const BadInputCase& c, std::ostream* os) {
  *os << c.name;
}

class OwnModelBadInputTest : public ::testing::TestWithParam<BadInputCase> {};

// `text` with every "DIR" replaced by `dir`.
std::string InDir(std::string text, const std::string& dir) {
  for (size_t at = text.find("DIR"); at != std::string::npos;
       at = text.find("DIR", at + dir.size()))
    text.replace(at, 3, dir);
  return text;
}

TEST_P(OwnModelBadInputTest, ExitsTwoWithOneLine) {
  const BadInputCase& c = GetParam();
  ScratchDir dir;
  for (std::vector<std::string> args : c.write) {
    for (std::string& a : args)
      a = InDir(a, dir.path());
    Python(args);
  }
  if (c.module == "notes.txt")
    std::ofstream(dir.File("notes.txt")) << "not a model\n";
  auto r = RunPstrain(
      Concat(Concat({"launch", "--world_size", "2", "--master_port", "0",
                     "--max_steps", "1", "--checkpoint", dir.File("m.pt")},
                    Job(dir.File(c.module), dir.path())),
             c.flags),
      120);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const std::string line = LineWith(r.err, InDir(c.message[0], dir.path()));
  for (const std::string& part : c.message) {
    EXPECT_NE(line.find(InDir(part, dir.path())), std::string::npos)
        << "expected \"" << part << "\" in one line of:\n"
        << r.err;
  }
}

const std::vector<std::string> kMlp20 = {"mlp", "DIR/mlp.pt", "5",
                                         "20",  "32",         "4"};

INSTANTIATE_TEST_SUITE_P(
    Cases, OwnModelBadInputTest,
    ::testing::Values(
        BadInputCase{"NotTorchScript",
                     {{"data", "DIR", "1", "40", "20", "4"}},
                     "notes.txt",
                     {},
                     {"notes.txt: not a TorchScript module"}},
        BadInputCase{"ForwardFailsOnTheDataShape",
                     {kMlp20, {"data", "DIR", "1", "40", "7", "4"}},
                     "mlp.pt",
                     {},
                     {"--model DIR/mlp.pt: forward on DIR/test.pt's x [2, 7] "
                      "failed: ",
                      "mat1 and mat2 shapes cannot be multiplied"}},
        BadInputCase{
            "XAndYOfDifferentN",
            {kMlp20, {"data", "DIR", "1", "40", "20", "4", "--y_n", "30"}},
            "mlp.pt",
            {},
            {"test.pt: x has 40 samples", "and y 30", "expected the same N"}},
        BadInputCase{
            "FloatYForCrossEntropy",
            {kMlp20, {"data", "DIR", "1", "40", "20", "4", "--y_float"}},
            "mlp.pt",
            {},
            {"test.pt: --loss cross_entropy needs int64 class "
             "indices",
             "y is float32 [2, 4]"}},
        BadInputCase{"IntegerYForMse",
                     {kMlp20, {"data", "DIR", "1", "40", "20", "4"}},
                     "mlp.pt",
                     {"--loss", "mse"},
                     {"test.pt: --loss mse needs a float target of the "
                      "output's shape [2, 4]",
                      "y is int64 [2]"}}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace pstrain::testing
