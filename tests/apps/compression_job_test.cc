// Gradient compression through real processes: what each codec
// pushes against none, from the summary's bytes_pushed, the server's
// memory with 8 workers against 2, and lstm_lm's sparse rows in fp16.

#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// Each run checkpoints into `dir`: the default, pstrain-model.pt in the
// working directory, is shared with every other test that runs beside it.
nlohmann::json Summary(const ScratchDir& dir, const std::string& model,
                       int workers, int steps, const std::string& compression) {
  auto r = RunPstrain({"launch",
                       "--world_size",
                       std::to_string(workers + 1),
                       "--master_port",
                       "0",
                       "--model",
                       model,
                       "--batch_size",
                       "4",
                       "--max_steps",
                       std::to_string(steps),
                       "--compression",
                       compression,
                       "--data_dir",
                       dir.path(),
                       "--checkpoint",
                       dir.File("model.pt"),
                       "--threads",
                       "1",
                       "--json"},
                      300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json summary = FindEvent(r.out, "summary");
  EXPECT_FALSE(summary.is_null()) << r.out;
  return summary;
}

// share/doc/compression.md's codec table: the bytes a push carries against
// none, at most.
TEST(CompressionJobTest, EachCodecPushesItsFractionOfTheBytes) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 64, 16);
  const double none =
      Summary(dir, "net", 2, 4, "none")["bytes_pushed"].get<double>();
  // Net's 1.2 M float32 parameters, pushed by 2 workers 4 times.
  EXPECT_GT(none, 2 * 4 * 4.7e6);
  const std::pair<const char*, double> kAtMost[] = {{"fp16", 0.51},
                                                    {"bf16", 0.51},
                                                    {"int8", 0.27},
                                                    {"topk:0.01", 0.03},
                                                    {"onebit", 0.05}};
  for (const auto& [codec, at_most] : kAtMost) {
    const double pushed =
        Summary(dir, "net", 2, 4, codec)["bytes_pushed"].get<double>();
    EXPECT_LE(pushed / none, at_most) << codec;
    EXPECT_GT(pushed / none, at_most / 4) << codec << ": too few bytes";
  }
}

// The server decodes each push straight into the step's sums: 6 more
// workers must not cost a decoded copy each. resnet18's are 45 MB: async,
// whose per-worker buffers are such copies, went from 630 MB with 2
// workers to 871 MB with 8 (1.38x; full Fashion-MNIST), sync from 597 to
// 586 MB.
TEST(CompressionJobTest, SyncServerMemoryIsFlatInTheWorkers) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 64, 16);
  const double two =
      Summary(dir, "resnet18", 2, 2, "topk:0.01")["peak_rss_bytes"]
          .get<double>();
  const double eight =
      Summary(dir, "resnet18", 8, 2, "topk:0.01")["peak_rss_bytes"]
          .get<double>();
  EXPECT_GT(two, 0);
  EXPECT_LE(eight, 1.2 * two) << "2 workers: " << two << " bytes, 8: " << eight;
}

// The run's summaries, the server's first (null when missing).
std::vector<nlohmann::json> Summaries(const std::string& out) {
  std::vector<nlohmann::json> found(1);
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("event", "") != "summary")
      continue;
    if (j.value("role", "") == "server") {
      found[0] = j;
    } else {
      found.push_back(j);
    }
  }
  return found;
}

// lstm_lm with an embedding table wide against its LSTM (256 against 8),
// so that the rows are a fifth of what a push carries, on 2 workers;
// `codec` both ways. Every trained float32 tensor is coded
// (--compress_min_bytes 0), so the run pushes half the bytes of none only
// if its rows travel coded too: with them raw, fp16 would push 0.63.
std::vector<nlohmann::json> LmRun(const ScratchDir& dir,
                                  const std::string& codec) {
  auto r = RunPstrain({"launch",
                       "--world_size",
                       "3",
                       "--master_port",
                       "0",
                       "--model",
                       "lstm_lm",
                       "--data_dir",
                       dir.path(),
                       "--vocab_size",
                       "30",
                       "--bptt",
                       "5",
                       "--embed_dim",
                       "256",
                       "--hidden_dim",
                       "8",
                       "--num_layers",
                       "1",
                       "--batch_size",
                       "4",
                       "--epochs",
                       "3",
                       "--max_steps",
                       "20",
                       "--compression",
                       codec,
                       "--pull_compression",
                       codec,
                       "--compress_min_bytes",
                       "0",
                       "--checkpoint",
                       dir.File(codec + ".pt"),
                       "--threads",
                       "1",
                       "--json"},
                      300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> s = Summaries(r.out);
  EXPECT_FALSE(s[0].is_null()) << r.out;
  EXPECT_EQ(s.size(), 3u) << r.out;
  return s;
}

// Compression with the sparse rows of lstm_lm: fp16 rows
// (and pulled rows) travel in half the bytes, and the job still trains.
TEST(CompressionJobTest, LmSparseRowsTravelInFp16) {
  ScratchDir dir;
  WriteTinyCorpus(dir.path());
  const auto none = LmRun(dir, "none");
  const auto fp16 = LmRun(dir, "fp16");
  ASSERT_EQ(fp16.size(), 3u);
  for (size_t w = 1; w < fp16.size(); ++w) {
    // Rows did travel alone: fewer than the table's 31 a step.
    EXPECT_GT(fp16[w]["sparse_rows_pushed_per_step"].get<double>(), 0);
    EXPECT_LT(fp16[w]["sparse_rows_pushed_per_step"].get<double>(), 31);
  }
  const double pushed = fp16[0]["bytes_pushed"].get<double>() /
                        none[0]["bytes_pushed"].get<double>();
  const double pulled = fp16[0]["bytes_pulled"].get<double>() /
                        none[0]["bytes_pulled"].get<double>();
  std::cerr << "lstm_lm fp16 against none: bytes_pushed " << pushed
            << ", bytes_pulled " << pulled << "\n";
  EXPECT_LE(pushed, 0.51);
  EXPECT_GT(pushed, 0.45);
  EXPECT_LE(pulled, 0.55);
}

}  // namespace
}  // namespace pstrain::testing
