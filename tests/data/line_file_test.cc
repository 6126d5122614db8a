#include "data/line_file.h"

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/idx_files.h"

namespace pstrain::data {
namespace {

using testing::ScratchDir;
using testing::WriteGz;
using testing::WritePlain;

// Every line of `path`, or the error that ended them (after `*lines`).
Status ReadLines(const std::string& path, std::vector<std::string>* lines) {
  auto file = LineFile::Open(path);
  if (!file.ok())
    return file.status();
  std::string_view line;
  for (;;) {
    Result<bool> more = (*file)->Next(&line);
    if (!more.ok())
      return more.status();
    if (!*more)
      return Status::Ok();
    lines->emplace_back(line);
  }
}

TEST(LineFileTest, ReadsPlainAndGzipAlikeWithALastLineWithoutNewline) {
  ScratchDir dir;
  const std::string text = "a\tb\n\nthird line\nlast";
  WritePlain(dir.File("plain.txt"), text);
  WriteGz(dir.File("zipped.txt.gz"), text);
  const std::vector<std::string> want = {"a\tb", "", "third line", "last"};
  for (const char* name : {"plain.txt", "zipped.txt.gz"}) {
    std::vector<std::string> lines;
    ASSERT_TRUE(ReadLines(dir.File(name), &lines).ok()) << name;
    EXPECT_EQ(lines, want) << name;
  }
}

TEST(LineFileTest, ALineLongerThanOneReadComesWhole) {
  ScratchDir dir;
  const std::string long_line(700 * 1024, 'x');  // over two 256 KiB reads
  WriteGz(dir.File("long.gz"), "short\n" + long_line + "\nend\n");
  std::vector<std::string> lines;
  ASSERT_TRUE(ReadLines(dir.File("long.gz"), &lines).ok());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "short");
  EXPECT_EQ(lines[1], long_line);
  EXPECT_EQ(lines[2], "end");
}

TEST(LineFileTest, AMissingFileIsNotFoundAndAnEmptyOneInvalid) {
  ScratchDir dir;
  auto missing = LineFile::Open(dir.File("nope.txt"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir.File("nope.txt")),
            std::string::npos);
  WritePlain(dir.File("empty.txt"), "");
  auto empty = LineFile::Open(dir.File("empty.txt"));
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("empty.txt: empty file"),
            std::string::npos);
}

TEST(LineFileTest, ATruncatedGzipGivesItsLinesThenCorruptionNamingIt) {
  ScratchDir dir;
  std::string text;
  for (int i = 0; i < 20000; ++i)
    text += "line " + std::to_string(i) + "\n";
  WriteGz(dir.File("whole.gz"), text);
  std::ifstream in(dir.File("whole.gz"), std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)),
                 std::istreambuf_iterator<char>());
  WritePlain(dir.File("cut.gz"), gz.substr(0, gz.size() / 2));
  std::vector<std::string> lines;
  Status s = ReadLines(dir.File("cut.gz"), &lines);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("cut.gz: gzip stream truncated"),
            std::string::npos)
      << s.message();
  ASSERT_FALSE(lines.empty());
  EXPECT_LT(lines.size(), 20000u);
  for (size_t i = 0; i < lines.size(); ++i)  // whole lines only
    EXPECT_EQ(lines[i], "line " + std::to_string(i));
}

}  // namespace
}  // namespace pstrain::data
