// lstm_lm through real processes on a tiny generated corpus: sync with two
// workers of batch b is one process of batch 2b (BPTT windows, the state
// carried across windows and epochs, the server clipping the averaged
// gradient), and eval's perplexity is the summary's.

#include <sstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/text_corpus.h"
#include "job_test.h"
#include "models/language_model.h"
#include "models/model_state.h"
#include "ps/job/job_data.h"
#include "ps/store/checkpoint.h"
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
// Adagrad's first step is lr * g / (|g| + eps): with libtorch's eps 1e-10
// it is lr * sign(g), so an element that is 0 in one sum and 1e-12 in
// another (two workers' halves against one batch) moves by lr. An eps
// above rounding keeps the comparison about the server, not about signs.
constexpr double kAdagradEps = 1e-3;

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
  return {"--model", "lstm_lm", "--data_dir", dir.path(), "--vocab_size", "30",
          "--bptt", std::to_string(kBptt), "--embed_dim", "8", "--hidden_dim",
          "16", "--num_layers", "2", "--batch_size", std::to_string(kBatch),
          "--epochs", "2", "--max_steps", std::to_string(kSteps), "--optimizer",
          "sgd", "--lr", std::to_string(kLr), "--momentum", "0",
          // The reference steps at a constant lr.
          "--lr_schedule", "constant", "--clip_grad_norm",
          std::to_string(kClip), "--seed", std::to_string(kSeed), "--json"};
}

// One process on all 2b columns: `optimizer` (libtorch's SGD without
// momentum or Adagrad, at kLr) and, when clip > 0, clip_grad_norm_, as the
// server does.
ps::NamedTensors TrainSingleProcess(const std::string& dir,
                                    const std::string& optimizer = "sgd",
                                    double clip = kClip) {
  const ps::JobSpec spec = Spec(dir);
  auto corpus = ps::OpenJobCorpus(spec, dir);
  torch::manual_seed(kSeed);
  auto model = ps::MakeJobModel(spec);
  EXPECT_TRUE(model.ok());
  auto& lm = dynamic_cast<models::LanguageModel&>(**model);
  worker::LmStream stream((*corpus)->train, 2 * kBatch, 0, 2 * kBatch, kBptt);
  EXPECT_LT(stream.steps_per_epoch(), kSteps) << "cross an epoch";
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (optimizer == "adagrad") {
    opt = std::make_unique<torch::optim::Adagrad>(
        lm.parameters(), torch::optim::AdagradOptions(kLr).eps(kAdagradEps));
  } else {
    opt = std::make_unique<torch::optim::SGD>(lm.parameters(),
                                              torch::optim::SGDOptions(kLr));
  }
  lm.train();
  for (int step = 0; step < kSteps; ++step) {
    opt->zero_grad();
    int64_t tokens = 0;
    stream.Loss(lm, step % stream.steps_per_epoch(), torch::kCPU, &tokens)
        .backward();
    if (clip > 0)
      torch::nn::utils::clip_grad_norm_(lm.parameters(), clip);
    opt->step();
  }
  ps::NamedTensors out;
  for (const auto& s : models::ModelState(lm))
    out.emplace_back(s.name, s.value.detach().clone());
  return out;
}

TEST(LmTrainTest, SyncOfTwoWorkersEqualsOneProcessAndEvalEqualsSummary) {
  ScratchDir dir;
  WriteTinyCorpus(dir.path());
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

// The workers' summaries (role "worker") in launch's output.
std::vector<nlohmann::json> WorkerSummaries(const std::string& out) {
  std::vector<nlohmann::json> found;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == "summary" &&
        j.value("role", "") == "worker") {
      found.push_back(j);
    }
  }
  return found;
}

// Sync of 2 workers and `servers` servers, `optimizer` at kLr, no
// clipping, written to `checkpoint`; `extra`: more flags. Returns the
// workers' summaries.
std::vector<nlohmann::json> LaunchSync(const ScratchDir& dir,
                                       const std::string& optimizer,
                                       const std::string& checkpoint,
                                       std::vector<std::string> extra,
                                       int servers = 1) {
  std::vector<std::string> flags = Flags(dir);
  for (size_t i = 0; i + 1 < flags.size(); ++i) {
    if (flags[i] == "--optimizer")
      flags[i + 1] = optimizer;
    if (flags[i] == "--clip_grad_norm")
      flags[i + 1] = "0";
  }
  flags.insert(flags.end(), {"--eps", std::to_string(kAdagradEps)});
  auto r =
      RunPstrain(Concat(Concat({"launch", "--master_port", "0", "--checkpoint",
                                dir.File(checkpoint)},
                               flags),
                        Concat({"--num_servers", std::to_string(servers),
                                "--world_size", std::to_string(servers + 2)},
                               extra)),
                 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return WorkerSummaries(r.out);
}

class LmSparseRowsTest : public ::testing::TestWithParam<std::string> {};

// The rows a worker pushes and the lazy row update give, for
// SGD without momentum and Adagrad, what one process on the combined batch
// computes, and what the tables sent whole give.
TEST_P(LmSparseRowsTest, SyncEqualsOneProcessAndTheDenseTables) {
  ScratchDir dir;
  WriteTinyCorpus(dir.path());
  const std::string optimizer = GetParam();
  auto sparse = LaunchSync(dir, optimizer, "sparse.pt", {});
  ASSERT_EQ(sparse.size(), 2u);
  for (const auto& s : sparse) {
    // Rows did travel alone: fewer than the table's 31 per step.
    EXPECT_GT(s["sparse_rows_pushed_per_step"].get<double>(), 0) << s;
    EXPECT_LT(s["sparse_rows_pushed_per_step"].get<double>(), 31) << s;
    EXPECT_GT(s["sparse_bytes_saved"].get<uint64_t>(), 0u) << s;
  }
  auto dense =
      LaunchSync(dir, optimizer, "dense.pt", {"--sparse_embeddings=false"});
  ASSERT_EQ(dense.size(), 2u);
  EXPECT_EQ(dense[0]["sparse_rows_pushed_per_step"].get<double>(), 0);

  ps::NamedTensors single = TrainSingleProcess(dir.path(), optimizer, 0);
  ASSERT_TRUE(ps::SaveCheckpoint(dir.File("single.pt"), single, {}).ok());
  EXPECT_LT(MaxAbsDiff(dir.File("sparse.pt"), dir.File("single.pt")), 1e-5);
  EXPECT_LT(MaxAbsDiff(dir.File("dense.pt"), dir.File("single.pt")), 1e-5);
  EXPECT_LT(MaxAbsDiff(dir.File("sparse.pt"), dir.File("dense.pt")), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, LmSparseRowsTest,
                         ::testing::Values("sgd", "adagrad"));

// Two servers, the table split into row ranges (--slice_bytes below its
// 31 x 8 x 4 bytes), train what one server trains.
TEST(LmSparseRowsTest, TwoServersEqualOne) {
  ScratchDir dir;
  WriteTinyCorpus(dir.path());
  auto one = LaunchSync(dir, "adagrad", "one.pt", {"--slice_bytes", "256"});
  ASSERT_EQ(one.size(), 2u);
  auto two = LaunchSync(dir, "adagrad", "two.pt", {"--slice_bytes", "256"}, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_GT(two[0]["sparse_rows_pushed_per_step"].get<double>(), 0);
  EXPECT_LT(MaxAbsDiff(dir.File("one.pt"), dir.File("two.pt")), 1e-6);
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
