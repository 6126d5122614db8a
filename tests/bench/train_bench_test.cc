// `pstrain bench train` as a real process on a tiny data set: one document
// with a row per mode; bad flags and missing data exit 2 with one line.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testing/idx_files.h"
#include "testing/process.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// The one error line ("pstrain: error: ...") of a process's stderr.
std::string ErrorLine(const std::string& err) {
  auto at = err.find("pstrain: error: ");
  if (at == std::string::npos)
    return "";
  return err.substr(at, err.find('\n', at) - at);
}

TEST(TrainBenchProcessTest, PrintsOneDocumentWithARowPerMode) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 320, 100);
  auto r = RunPstrain({"bench", "train", "--model", "mlp", "--modes",
                       "single,sync", "--world_size", "3", "--steps", "20",
                       "--batch_size", "8", "--data_dir", dir.path(), "--json"},
                      180);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  EXPECT_EQ(doc["schema"], "pstrain.bench/1");
  EXPECT_TRUE(doc["machine"].is_object());
  EXPECT_TRUE(doc["build"].is_object());
  const auto& rows = doc["train"];
  ASSERT_EQ(rows.size(), 2u) << doc.dump(2);
  EXPECT_EQ(rows[0]["mode"], "single");
  EXPECT_EQ(rows[1]["mode"], "sync");
  for (const auto& row : rows) {
    EXPECT_GT(row["samples_per_second"].get<double>(), 0) << row;
    EXPECT_GT(row["wall_seconds"].get<double>(), 0) << row;
    EXPECT_GE(row["test_accuracy"].get<double>(), 0) << row;
    EXPECT_LE(row["test_accuracy"].get<double>(), 1) << row;
    EXPECT_EQ(row["steps"], 20) << row;
    EXPECT_GT(row["seconds_per_step"].get<double>(), 0) << row;
    EXPECT_GT(row["compute_seconds_per_step"].get<double>(), 0) << row;
  }
  EXPECT_EQ(rows[0]["samples"], 20 * 8);
  EXPECT_EQ(rows[1]["samples"], 2 * 20 * 8);  // two workers
  EXPECT_GT(rows[1]["communication_seconds_per_step"].get<double>(), 0);
  EXPECT_GE(rows[1]["waiting_seconds_per_step"].get<double>(), 0);
  EXPECT_TRUE(rows[1]["notes"].empty()) << rows[1];  // waiting is reported
  EXPECT_EQ(rows[0]["waiting_seconds_per_step"], 0.0);
  EXPECT_DOUBLE_EQ(rows[0]["speedup_over_single"].get<double>(), 1.0);
  EXPECT_GT(rows[1]["speedup_over_single"].get<double>(), 0);
}

// --compression and --pull_compression reach launch: fp16 both ways halves
// a worker's bytes per step (biases under 4 KiB travel raw).
TEST(TrainBenchProcessTest, CompressionHalvesBytesPerStepWithFp16) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 320, 100);
  std::vector<nlohmann::json> rows;
  for (const char* codec : {"none", "fp16"}) {
    auto r = RunPstrain(
        {"bench", "train", "--model", "mlp", "--modes", "sync", "--steps", "5",
         "--batch_size", "8", "--compression", codec, "--pull_compression",
         codec, "--data_dir", dir.path(), "--json"},
        180);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto doc = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.out;
    ASSERT_EQ(doc["train"].size(), 1u) << doc.dump(2);
    rows.push_back(doc["train"][0]);
    EXPECT_EQ(rows.back()["compression"], codec);
    EXPECT_EQ(rows.back()["pull_compression"], codec);
  }
  for (const char* field : {"bytes_per_step", "bytes_pushed_per_step"}) {
    const double fraction =
        rows[1][field].get<double>() / rows[0][field].get<double>();
    EXPECT_GT(fraction, 0.49) << field;
    EXPECT_LT(fraction, 0.51) << field;
  }
}

// Single with the workers' batches together sees sync's samples, and as sync
// is the same computation (the lr schedule's too), scores what it scores.
TEST(TrainBenchProcessTest, SingleBatchSizeGivesSingleSyncsSamples) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 320, 100);
  auto r = RunPstrain({"bench",
                       "train",
                       "--model",
                       "mlp",
                       "--modes",
                       "single,sync",
                       "--world_size",
                       "3",
                       "--steps",
                       "20",
                       "--batch_size",
                       "8",
                       "--single_batch_size",
                       "16",
                       "--lr_schedule",
                       "cosine",
                       "--lr",
                       "0.1",
                       "--data_dir",
                       dir.path(),
                       "--json"},
                      180);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  const auto& rows = doc["train"];
  ASSERT_EQ(rows.size(), 2u) << doc.dump(2);
  EXPECT_EQ(rows[0]["batch_size"], 16);
  EXPECT_EQ(rows[1]["batch_size"], 8);
  EXPECT_EQ(rows[0]["samples"], 20 * 16);
  EXPECT_EQ(rows[1]["samples"], 20 * 16);
  EXPECT_NEAR(rows[0]["test_loss"].get<double>(),
              rows[1]["test_loss"].get<double>(), 1e-4);
}

TEST(TrainBenchProcessTest, HumanTableHasARowPerMode) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 320, 100);
  auto r = RunPstrain(
      {"bench", "train", "--model", "mlp", "--modes", "single", "--steps", "5",
       "--batch_size", "8", "--data_dir", dir.path()},
      60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("samples/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nsingle "), std::string::npos) << r.out;
}

TEST(TrainBenchProcessTest, BadFlagsExit2WithOneLine) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"bench", "train", "--modes", "single,bogus"},
        std::vector<std::string>{"bench", "train", "--steps", "0"},
        std::vector<std::string>{"bench", "train", "--world_size", "1"},
        std::vector<std::string>{"bench", "train", "--device", "gpu"},
        std::vector<std::string>{"bench", "wire", "--op", "push,poke"},
        std::vector<std::string>{"bench"}}) {
    auto r = RunPstrain(args, 30);
    EXPECT_EQ(r.exit_code, 2) << args.back() << "\n" << r.err;
    EXPECT_NE(ErrorLine(r.err), "") << r.err;
  }
}

// --placement worker,server: the single process once, then each mode in
// both placements; a batch of mlp travels in a small fraction of the bytes
// of its gradients and parameters.
TEST(TrainBenchProcessTest, PlacementServerSendsBatchesNotGradients) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 320, 100);
  auto r =
      RunPstrain({"bench", "train", "--model", "mlp", "--modes", "single,sync",
                  "--placement", "worker,server", "--steps", "10",
                  "--batch_size", "8", "--data_dir", dir.path(), "--json"},
                 180);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  const auto& rows = doc["train"];
  ASSERT_EQ(rows.size(), 3u) << doc.dump(2);
  EXPECT_EQ(rows[0]["placement"], "none");
  EXPECT_EQ(rows[1]["placement"], "worker");
  EXPECT_EQ(rows[2]["placement"], "server");
  EXPECT_EQ(rows[2]["mode"], "sync");
  EXPECT_EQ(rows[2]["samples"], 2 * 10 * 8);
  EXPECT_GT(rows[2]["samples_per_second"].get<double>(), 0);
  // A batch: 8 * 784 floats and 8 labels, about 25 kB; mlp's gradients
  // and parameters: about 0.8 MB each way.
  EXPECT_LT(rows[2]["bytes_per_step"].get<double>() * 10,
            rows[1]["bytes_per_step"].get<double>())
      << rows.dump(2);
}

TEST(TrainBenchProcessTest, MissingDataExits2NamingTheFile) {
  ScratchDir dir;
  auto r =
      RunPstrain({"bench", "train", "--model", "mlp", "--modes", "single,sync",
                  "--steps", "5", "--data_dir", dir.path(), "--json"},
                 60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(ErrorLine(r.err).find("train-images-idx3-ubyte"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace pstrain::testing
