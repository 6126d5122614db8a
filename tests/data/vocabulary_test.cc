#include "data/vocabulary.h"

#include <gtest/gtest.h>

namespace pstrain::data {
namespace {

TEST(VocabularyTest, MostFrequentFirstTiesByByteOrderThenUnk) {
  const std::vector<std::string> tokens = {"b",   "a",   "the", "the", "c",
                                           "The", "The", "b",   "a"};
  Vocabulary v = Vocabulary::Build(tokens, 4);
  ASSERT_EQ(v.size(), 5);
  EXPECT_EQ(v.word(0), "The");  // 2 each: "The" < "a" < "b" < "the"
  EXPECT_EQ(v.word(1), "a");
  EXPECT_EQ(v.word(2), "b");
  EXPECT_EQ(v.word(3), "the");
  EXPECT_EQ(v.word(4), "<unk>");
  EXPECT_EQ(v.unk_id(), 4);
  EXPECT_EQ(v.Id("c"), 4);
  EXPECT_TRUE(v.Encode({"the", "c", "a"})
                  .equal(torch::tensor({3, 4, 1}, torch::kInt64)));
}

TEST(VocabularyTest, UnkInTheTextIsNotAddedTwice) {
  Vocabulary v = Vocabulary::Build({"<unk>", "<unk>", "x", "y"}, 2);
  ASSERT_EQ(v.size(), 2);
  EXPECT_EQ(v.unk_id(), 0);
  EXPECT_EQ(v.Id("y"), 0);
}

TEST(VocabularyTest, SmallTextKeepsEveryWord) {
  Vocabulary v = Vocabulary::Build({"x", "y"}, 100);
  EXPECT_EQ(v.size(), 3);
}

}  // namespace
}  // namespace pstrain::data
