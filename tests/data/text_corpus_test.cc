#include "data/text_corpus.h"

#include <fstream>

#include <gtest/gtest.h>

#include "testing/idx_files.h"

namespace pstrain::data {
namespace {

using testing::ScratchDir;

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(TextCorpusTest, ReadsTheThreeFilesWithEosAndUnk) {
  ScratchDir dir;
  Write(dir.File("train.txt"), "a b a\n\nc a\n");
  Write(dir.File("valid.txt"), "a z\n");
  Write(dir.File("test.txt"), "b, a");
  TextCorpusOptions o;
  o.data_dir = dir.path();
  o.vocab_size = 2;
  auto c = LoadTextCorpus(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // Counts: a 3, <eos> 3, b 1, c 1: the two kept are <eos> (ties by byte
  // order: '<' < 'a') and a.
  ASSERT_EQ(c->vocab.size(), 3);
  EXPECT_EQ(c->vocab.word(0), "<eos>");
  EXPECT_EQ(c->vocab.word(1), "a");
  EXPECT_TRUE(c->train.equal(torch::tensor({1, 2, 1, 0, 0, 2, 1, 0})));
  EXPECT_TRUE(c->valid.equal(torch::tensor({1, 2, 0})));
  EXPECT_TRUE(c->test.equal(torch::tensor({2, 1, 0})));  // "b," is a word
  EXPECT_DOUBLE_EQ(UnknownRate(c->valid, c->vocab), 1.0 / 3);
}

TEST(TextCorpusTest, MissingOrEmptyFileIsNamed) {
  ScratchDir dir;
  Write(dir.File("train.txt"), "a b\n");
  Write(dir.File("valid.txt"), "a\n");
  TextCorpusOptions o;
  o.data_dir = dir.path();
  auto missing = LoadTextCorpus(o);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir.File("test.txt")),
            std::string::npos);
  Write(dir.File("test.txt"), " \n\n");
  auto empty = LoadTextCorpus(o);
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find(dir.File("test.txt") + " is empty"),
            std::string::npos);
}

}  // namespace
}  // namespace pstrain::data
