#include "data/tokenizer.h"

#include <gtest/gtest.h>

namespace pstrain::data {
namespace {

using Tokens = std::vector<std::string>;

Tokens Tokenize(std::string_view line, bool split_punctuation) {
  Tokens out;
  TokenizeLine(line, TokenizerOptions{split_punctuation}, &out);
  return out;
}

TEST(TokenizerTest, SplitsOnWhitespaceAndEndsTheLine) {
  EXPECT_EQ(Tokenize(" The  cat\tsat.\r", false),
            (Tokens{"The", "cat", "sat.", "<eos>"}));
  EXPECT_EQ(Tokenize("", false), (Tokens{"<eos>"}));
}

TEST(TokenizerTest, SplitsPunctuationFromWords) {
  EXPECT_EQ(Tokenize("\"Don't!\" -- 3.5x", true),
            (Tokens{"\"", "Don", "'", "t", "!", "\"", "-", "-", "3", ".", "5x",
                    "<eos>"}));
}

TEST(TokenizerTest, KeepsNonAsciiBytesInWords) {
  EXPECT_EQ(Tokenize("caf\xc3\xa9, ok", true),
            (Tokens{"caf\xc3\xa9", ",", "ok", "<eos>"}));
}

}  // namespace
}  // namespace pstrain::data
