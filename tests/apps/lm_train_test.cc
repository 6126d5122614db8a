// lstm_lm through real processes on a tiny generated corpus: sync with two
// workers of batch b is one process of batch 2b (BPTT windows, the state
// carried across windows and epochs, the server clipping the averaged
// gradient), and eval's perplexity is the summary's.

#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/text_corpus.h"
#include "job_test.h"
#include "models/language_model.h"
#include "models/model_state.h"
#include "ps/checkpoint.h"
#include "ps/job_data.h"
#include "testing/idx_files.h"
#include "worker/lm_stream.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

constexpr int kBatch = 4;
constexpr int kBptt = 5;
constexpr int kSteps = 20;
constexpr double kLr = 0.5;
constexpr double kClip = 0.2;
constexpr uint64_t kSeed = 3;

// Lines of 1-12 words drawn from 40, some more often than others.
void WriteText(const std::string& path, int lines, uint32_t seed) {
  std::mt19937 gen(seed);
  std::geometric_distribution<int> word(0.08);
  std::uniform_int_distribution<int> length(1, 12);
  std::ofstream out(path);
  for (int l = 0; l < lines; ++l) {
    for (int n = length(gen); n > 0; --n)
      out << "w" << std::min(word(gen), 39) << (n > 1 ? " " : "");
    out << "\n";
  }
}

ps::JobSpec Spec(const std::string& dir) {
  ps::JobSpec spec;
  spec.model = "lstm_lm";
  spec.dataset = "text";
  spec.vocab_size = 30;
  spec.bptt = kBptt;
  spec.embed_dim = 8;
  spec.hidden_dim = 16;
  spec.num_layers = 2;
  spec.seed = kSeed;
  auto corpus = ps::OpenJobCorpus(spec, dir);
  EXPECT_TRUE(corpus.ok()) << corpus.status().ToString();
  spec.num_classes = (*corpus)->vocab.size();
  return spec;
}

std::vector<std::string> Flags(const ScratchDir& dir) {
  return {"--model",
          "lstm_lm",
          "--data_dir",
          dir.path(),
          "--vocab_size",
          "30",
          "--bptt",
          std::to_string(kBptt),
          "--embed_dim",
          "8",
          "--hidden_dim",
          "16",
          "--num_layers",
          "2",
          "--batch_size",
          std::to_string(kBatch),
          "--epochs",
          "2",
          "--max_steps",
          std::to_string(kSteps),
          "--optimizer",
          "sgd",
          "--lr",
          std::to_string(kLr),
          "--momentum",
          "0",
          "--clip_grad_norm",
          std::to_string(kClip),
          "--seed",
          std::to_string(kSeed),
          "--json"};
}

// One process on all 2b columns: SGD, clip_grad_norm_, as the server does.
ps::NamedTensors TrainSingleProcess(const std::string& dir) {
  const ps::JobSpec spec = Spec(dir);
  auto corpus = ps::OpenJobCorpus(spec, dir);
  torch::manual_seed(kSeed);
  auto model = ps::MakeJobModel(spec);
  EXPECT_TRUE(model.ok());
  auto& lm = dynamic_cast<models::LanguageModel&>(**model);
  worker::LmStream stream((*corpus)->train, 2 * kBatch, 0, 2 * kBatch, kBptt);
  EXPECT_LT(stream.steps_per_epoch(), kSteps) << "cross an epoch";
  torch::optim::SGD sgd(lm.parameters(), torch::optim::SGDOptions(kLr));
  lm.train();
  for (int step = 0; step < kSteps; ++step) {
    sgd.zero_grad();
    int64_t tokens = 0;
    stream.Loss(lm, step % stream.steps_per_epoch(), torch::kCPU, &tokens)
        .backward();
    torch::nn::utils::clip_grad_norm_(lm.parameters(), kClip);
    sgd.step();
  }
  ps::NamedTensors out;
  for (const auto& s : models::ModelState(lm))
    out.emplace_back(s.name, s.value.detach().clone());
  return out;
}

TEST(LmTrainTest, SyncOfTwoWorkersEqualsOneProcessAndEvalEqualsSummary) {
  ScratchDir dir;
  WriteText(dir.File("train.txt"), 60, 1);
  WriteText(dir.File("valid.txt"), 10, 2);
  WriteText(dir.File("test.txt"), 20, 3);
  auto r = RunPstrain(Concat({"launch", "--world_size", "3", "--master_port",
                              "0", "--checkpoint", dir.File("sync.pt")},
                             Flags(dir)),
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto summary = FindEvent(r.out, "summary");
  EXPECT_EQ(summary["steps"], kSteps) << r.out;
  ASSERT_TRUE(summary.contains("test_perplexity")) << summary;

  ps::NamedTensors single = TrainSingleProcess(dir.path());
  ASSERT_TRUE(ps::SaveCheckpoint(dir.File("single.pt"), single, {}).ok());
  EXPECT_LT(MaxAbsDiff(dir.File("sync.pt"), dir.File("single.pt")), 1e-5);

  auto e = RunPstrain({"eval", "--checkpoint", dir.File("sync.pt"),
                       "--data_dir", dir.path(), "--json"},
                      60);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  auto eval = FindEvent(e.out, "eval");
  // The same evaluator; only the thread counts may differ.
  const double perplexity = summary["test_perplexity"].get<double>();
  EXPECT_NEAR(eval["test_perplexity"].get<double>(), perplexity,
              1e-6 * perplexity);
  // Far below the 31 words' uniform perplexity: it learned something.
  EXPECT_LT(summary["test_perplexity"].get<double>(), 31);
}

TEST(LmTrainTest, MissingCorpusFileExits2NamingIt) {
  ScratchDir dir;
  WriteText(dir.File("train.txt"), 60, 1);
  WriteText(dir.File("test.txt"), 20, 3);
  auto r = RunPstrain({"launch", "--world_size", "2", "--master_port", "0",
                       "--model", "lstm_lm", "--data_dir", dir.path()},
                      60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir.File("valid.txt")), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pstrain::testing
