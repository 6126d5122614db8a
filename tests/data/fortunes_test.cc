#include "data/fortunes.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "testing/idx_files.h"

namespace pstrain::data {
namespace {

using testing::ScratchDir;

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(FortunesTest, Fnv1aOfKnownStrings) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
}

TEST(FortunesTest, SplitsByHashAndSkipsIndexesAndLinks) {
  ScratchDir dir;
  std::string text, expected_train;
  int64_t train = 0, valid = 0, test = 0;
  for (int i = 0; i < 60; ++i) {
    const std::string fortune = "fortune " + std::to_string(i) + "\nline two";
    text += fortune + "\n%\n";
    const uint64_t b = Fnv1a64(fortune) % 10;
    (b == 0 ? valid : b == 1 ? test : train) += 2;
  }
  Write(dir.File("a"), text);
  Write(dir.File("a.dat"), "binary index");
  std::filesystem::create_symlink(dir.File("a"), dir.File("a.u8"));
  std::filesystem::create_symlink(dir.File("a"), dir.File("b"));
  auto f = ReadFortunes(dir.path());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->fortunes, 60);
  EXPECT_EQ(static_cast<int64_t>(f->train.size()), train);
  EXPECT_EQ(static_cast<int64_t>(f->valid.size()), valid);
  EXPECT_EQ(static_cast<int64_t>(f->test.size()), test);
  EXPECT_GT(valid, 0);
  EXPECT_GT(test, 0);
}

TEST(FortunesTest, MissingOrEmptyDirectory) {
  ScratchDir dir;
  auto missing = ReadFortunes(dir.File("nope"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("fortunes"), std::string::npos);
  Write(dir.File("x"), "%\n%\n");
  auto empty = ReadFortunes(dir.path());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pstrain::data
