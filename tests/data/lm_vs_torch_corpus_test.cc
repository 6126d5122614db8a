// A process test: bench/lm_vs_torch.py (Python) reads a corpus exactly as
// lib/data does: the same fortune split, tokens, vocabulary and ids, for the
// fortunes layout (punctuation split) and for train/valid/test.txt.

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "data/text_corpus.h"
#include "testing/idx_files.h"
#include "testing/process.h"

namespace pstrain::data {
namespace {

using testing::ScratchDir;

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A fortune file: odd spacing, punctuation, non-ASCII bytes, empty lines,
// ties in counts, and no final newline.
std::string Fortunes(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += "\"Don't\tpanic!\" -- fortune #" + std::to_string(i % 7) +
            "\n\n  caf\xc3\xa9  au lait (" + std::to_string(i % 3) + ").\n";
    text += i + 1 < n ? "%\n" : "%";
  }
  return text;
}

std::vector<int64_t> Ids(const torch::Tensor& t) {
  return std::vector<int64_t>(t.data_ptr<int64_t>(),
                              t.data_ptr<int64_t>() + t.numel());
}

void ExpectSame(const TextCorpusOptions& o) {
  auto corpus = LoadTextCorpus(o);
  ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
  std::vector<std::string> args = {
      "/usr/bin/python3",
      std::string(PSTRAIN_SOURCE_DIR) + "/bench/lm_vs_torch.py",
      "--corpus_only",
      "--dump",
      "--vocab_size",
      std::to_string(o.vocab_size),
      "--fortunes_dir",
      o.fortunes_dir};
  if (!o.data_dir.empty())
    args.insert(args.end(), {"--data_dir", o.data_dir});
  auto r = pstrain::testing::Process(args).Wait(120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["vocab"].size(), static_cast<size_t>(corpus->vocab.size()));
  for (int64_t i = 0; i < corpus->vocab.size(); ++i) {
    // The word's bytes, from the UTF-8 of their Latin-1 code points.
    std::string word;
    const std::string utf8 = j["vocab"][i].get<std::string>();
    for (size_t k = 0; k < utf8.size(); ++k) {
      const unsigned char c = utf8[k];
      if (c < 0x80) {
        word += static_cast<char>(c);
      } else {  // two-byte UTF-8 of a Latin-1 code point
        word += static_cast<char>(((c & 0x03) << 6) | (utf8[++k] & 0x3f));
      }
    }
    EXPECT_EQ(word, corpus->vocab.word(i)) << i;
  }
  EXPECT_EQ(j["ids"]["train"].get<std::vector<int64_t>>(), Ids(corpus->train));
  EXPECT_EQ(j["ids"]["valid"].get<std::vector<int64_t>>(), Ids(corpus->valid));
  EXPECT_EQ(j["ids"]["test"].get<std::vector<int64_t>>(), Ids(corpus->test));
  EXPECT_EQ(j["corpus"]["fortunes"], corpus->fortunes);
}

TEST(LmVsTorchCorpusTest, FortunesLayoutMatches) {
  ScratchDir dir;
  Write(dir.File("a"), Fortunes(40));
  Write(dir.File("b"), Fortunes(25) + "\n");
  Write(dir.File("a.dat"), "index");
  TextCorpusOptions o;
  o.fortunes_dir = dir.path();
  o.vocab_size = 12;
  ExpectSame(o);
}

TEST(LmVsTorchCorpusTest, TextFilesMatch) {
  ScratchDir dir;
  Write(dir.File("train.txt"), " a b, c\n\nb a <unk> d\nc c a\n");
  Write(dir.File("valid.txt"), "a z\n");
  Write(dir.File("test.txt"), "b, a d");
  TextCorpusOptions o;
  o.data_dir = dir.path();
  o.vocab_size = 3;
  ExpectSame(o);
}

}  // namespace
}  // namespace pstrain::data
