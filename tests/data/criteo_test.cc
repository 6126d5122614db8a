#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/criteo_line.h"
#include "data/criteo_stream.h"
#include "testing/idx_files.h"

namespace pstrain::data {
namespace {

using testing::ScratchDir;
using testing::WriteGz;
using testing::WritePlain;

CriteoTableRows Rows(int64_t n) {
  CriteoTableRows rows;
  rows.fill(n);
  return rows;
}

// A good line: label `label`, integer j = `i` + j, categorical t = `c` + t
// in hex; the integer and categorical features in `missing` are empty.
std::string Line(int label, int i, int c,
                 const std::vector<int>& missing = {}) {
  std::string s = std::to_string(label);
  auto is_missing = [&missing](int field) {
    return std::find(missing.begin(), missing.end(), field) != missing.end();
  };
  for (int j = 0; j < kCriteoDense; ++j) {
    s += '\t';
    if (!is_missing(1 + j))
      s += std::to_string(i + j);
  }
  char hex[17];
  for (int t = 0; t < kCriteoSparse; ++t) {
    s += '\t';
    std::snprintf(hex, sizeof(hex), "%08x", c + t);
    if (!is_missing(1 + kCriteoDense + t))
      s += hex;
  }
  return s;
}

TEST(CriteoLineTest, ParsesLogOfIntegersAndHashedRows) {
  CriteoSample x;
  const CriteoTableRows rows = Rows(1000);
  // Integer 2 missing, integer 1 negative, categorical 5 missing.
  std::string line = Line(1, -3, 0x68fd1e64, {2, 1 + kCriteoDense + 5});
  ASSERT_EQ(ParseCriteoLine(line + "\r", rows, &x), CriteoBad::kNone);
  EXPECT_EQ(x.label, 1.0f);
  EXPECT_EQ(x.dense[0], 0.0f);  // -3: log(1 + 0)
  EXPECT_EQ(x.dense[1], 0.0f);  // missing
  EXPECT_FLOAT_EQ(x.dense[12], static_cast<float>(std::log1p(9.0)));
  EXPECT_EQ(x.rows[0], CriteoRow(0x68fd1e64, 0, 1000));
  EXPECT_EQ(x.rows[5], CriteoRow(0, 5, 1000));  // missing: value 0
  for (int t = 0; t < kCriteoSparse; ++t) {
    EXPECT_GE(x.rows[t], 0);
    EXPECT_LT(x.rows[t], 1000);
  }
}

TEST(CriteoLineTest, EqualValuesOfTwoFeaturesFallOnUnrelatedRows) {
  int same = 0;
  for (uint64_t v = 0; v < 1000; ++v)
    same += CriteoRow(v, 0, 1 << 20) == CriteoRow(v, 1, 1 << 20);
  EXPECT_LE(same, 1);
  EXPECT_EQ(CriteoRow(42, 3, 7), CriteoRow(42, 3, 7));
}

TEST(CriteoLineTest, EachKindOfBadLineIsNamed) {
  CriteoSample x;
  const CriteoTableRows rows = Rows(10);
  const std::string good = Line(0, 1, 1);
  EXPECT_EQ(ParseCriteoLine(good, rows, &x), CriteoBad::kNone);
  EXPECT_EQ(ParseCriteoLine(good + "\textra", rows, &x),
            CriteoBad::kFieldCount);
  EXPECT_EQ(ParseCriteoLine(good.substr(0, good.rfind('\t')), rows, &x),
            CriteoBad::kFieldCount);
  EXPECT_EQ(ParseCriteoLine("", rows, &x), CriteoBad::kLabel);
  EXPECT_EQ(ParseCriteoLine("2" + good.substr(1), rows, &x), CriteoBad::kLabel);
  std::string bad_int = good;
  bad_int.replace(2, 1, "1.5");
  EXPECT_EQ(ParseCriteoLine(bad_int, rows, &x), CriteoBad::kInteger);
  std::string bad_hex = good.substr(0, good.rfind('\t')) + "\tzz";
  EXPECT_EQ(ParseCriteoLine(bad_hex, rows, &x), CriteoBad::kCategorical);
  std::string long_hex =
      good.substr(0, good.rfind('\t')) + "\t" + std::string(17, 'a');
  EXPECT_EQ(ParseCriteoLine(long_hex, rows, &x), CriteoBad::kCategorical);
  EXPECT_STREQ(CriteoBadName(CriteoBad::kCategorical), "categorical");
}

// train.txt of `n` good lines; line i has label i % 2 and integers from i.
std::string TrainText(int n) {
  std::string text;
  for (int i = 0; i < n; ++i)
    text += Line(i % 2, i, i) + "\n";
  return text;
}

// The first integer feature of every sample the stream yields, in order:
// the line each came from (log(1 + i) back to i).
std::vector<int> LinesOf(CriteoStream& stream, int64_t* batches = nullptr) {
  std::vector<int> lines;
  CriteoBatch b;
  for (;;) {
    Result<bool> more = stream.Next(&b);
    EXPECT_TRUE(more.ok()) << more.status().message();
    if (!more.ok() || !*more)
      return lines;
    if (batches)
      ++*batches;
    EXPECT_EQ(b.dense.sizes(), (std::vector<int64_t>{b.labels.size(0), 13}));
    EXPECT_EQ(b.rows.sizes(), (std::vector<int64_t>{b.labels.size(0), 26}));
    for (int64_t k = 0; k < b.labels.size(0); ++k) {
      lines.push_back(static_cast<int>(
          std::lround(std::expm1(b.dense[k][0].item<double>()))));
      EXPECT_EQ(b.labels[k].item<float>(), lines.back() % 2);
    }
  }
}

TEST(CriteoStreamTest,
     EveryTenthLineOfTrainTxtIsHeldOutAndWorkersSplitTheRest) {
  ScratchDir dir;
  WriteGz(dir.File("train.txt.gz"), TrainText(40));
  auto test = CriteoSplitOf(dir.path(), /*test=*/true);
  ASSERT_TRUE(test.ok()) << test.status().message();
  auto held = CriteoStream::Open(*test, Rows(100), 3, 0, 1);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(LinesOf(**held), (std::vector<int>{9, 19, 29, 39}));

  auto train = CriteoSplitOf(dir.path(), /*test=*/false);
  ASSERT_TRUE(train.ok());
  std::vector<int> all;
  for (int w = 0; w < 2; ++w) {
    auto stream = CriteoStream::Open(*train, Rows(100), 5, w, 2);
    ASSERT_TRUE(stream.ok());
    int64_t batches = 0;
    std::vector<int> mine = LinesOf(**stream, &batches);
    EXPECT_EQ(mine.size(), 18u);
    EXPECT_EQ(batches, 4);  // 5, 5, 5, 3
    EXPECT_EQ(mine[0], w == 0 ? 0 : 1);
    all.insert(all.end(), mine.begin(), mine.end());
    // A second pass yields the same lines.
    EXPECT_EQ(LinesOf(**stream), mine);
    EXPECT_EQ((*stream)->counts().samples, 36);
    EXPECT_EQ((*stream)->counts().lines, 80);
  }
  std::sort(all.begin(), all.end());
  std::vector<int> want;
  for (int i = 0; i < 40; ++i) {
    if (i % 10 != 9)
      want.push_back(i);
  }
  EXPECT_EQ(all, want);
}

TEST(CriteoStreamTest, BadLinesAreSkippedAndCountedByKind) {
  ScratchDir dir;
  std::string text = Line(0, 0, 0) + "\n" + "garbage\n" + Line(0, 2, 2) +
                     "\tmore\n" + "7" + Line(1, 3, 3).substr(1) + "\n" +
                     Line(0, 4, 4) + "\n";
  WritePlain(dir.File("day_0"), text);
  WritePlain(dir.File("day_1"), Line(0, 100, 1) + "\n");
  auto train = CriteoSplitOf(dir.path(), false);
  ASSERT_TRUE(train.ok());
  auto stream = CriteoStream::Open(*train, Rows(10), 8, 0, 1);
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ(LinesOf(**stream), (std::vector<int>{0, 4}));
  const CriteoCounts& c = (*stream)->counts();
  EXPECT_EQ(c.bad_lines(), 3);
  EXPECT_EQ(c.bad[static_cast<int>(CriteoBad::kLabel)], 2);  // garbage, 7
  EXPECT_EQ(c.bad[static_cast<int>(CriteoBad::kFieldCount)], 1);
  EXPECT_EQ(c.samples, 2);
  auto test = CriteoSplitOf(dir.path(), true);
  ASSERT_TRUE(test.ok());
  auto held = CriteoStream::Open(*test, Rows(10), 8, 0, 1);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(LinesOf(**held), (std::vector<int>{100}));  // the last day
}

TEST(CriteoStreamTest, DayFilesGoInDayOrderNotNameOrder) {
  ScratchDir dir;
  for (int day : {0, 2, 10}) {
    WriteGz(dir.File("day_" + std::to_string(day) + ".gz"),
            Line(0, day * 2, 0) + "\n");
  }
  auto train = CriteoSplitOf(dir.path(), false);
  ASSERT_TRUE(train.ok());
  auto stream = CriteoStream::Open(*train, Rows(10), 8, 0, 1);
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ(LinesOf(**stream), (std::vector<int>{0, 4}));  // day 10 held out
}

TEST(CriteoStreamTest, MissingAndEmptyFilesAreErrorsNamingThem) {
  ScratchDir dir;
  EXPECT_EQ(CriteoSplitOf(dir.File("nowhere"), false).status().code(),
            StatusCode::kNotFound);
  auto none = CriteoSplitOf(dir.path(), false);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("train.txt"), std::string::npos);
  WritePlain(dir.File("day_0"), Line(0, 0, 0) + "\n");
  EXPECT_EQ(CriteoSplitOf(dir.path(), false).status().code(),
            StatusCode::kInvalidArgument);
  WritePlain(dir.File("day_1"), "");
  auto split = CriteoSplitOf(dir.path(), true);
  ASSERT_TRUE(split.ok());
  auto stream = CriteoStream::Open(*split, Rows(10), 8, 0, 1);
  EXPECT_EQ(stream.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(stream.status().message().find("day_1: empty file"),
            std::string::npos)
      << stream.status().message();
}

TEST(CriteoStreamTest, ATruncatedGzipIsReadToItsBreakCountedAndWarned) {
  ScratchDir dir;
  WriteGz(dir.File("whole.gz"), TrainText(30000));
  std::ifstream in(dir.File("whole.gz"), std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)),
                 std::istreambuf_iterator<char>());
  WritePlain(dir.File("day_0.gz"), gz.substr(0, gz.size() / 2));
  WritePlain(dir.File("day_1"), Line(1, 7, 7) + "\n");
  auto train = CriteoSplitOf(dir.path(), false);
  ASSERT_TRUE(train.ok());
  auto stream = CriteoStream::Open(*train, Rows(10), 4096, 0, 1);
  ASSERT_TRUE(stream.ok());
  std::vector<std::string> warnings;
  CriteoBatch b;
  int64_t samples = 0;
  for (;;) {
    Result<bool> more = (*stream)->Next(
        &b, [&warnings](const std::string& w) { warnings.push_back(w); });
    ASSERT_TRUE(more.ok()) << more.status().message();
    if (!*more)
      break;
    samples += b.labels.size(0);
  }
  EXPECT_GT(samples, 0);
  EXPECT_LT(samples, 30000);
  EXPECT_EQ((*stream)->counts().truncated_files, 1);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("day_0.gz: gzip stream truncated"),
            std::string::npos)
      << warnings[0];
  EXPECT_EQ((*stream)->counts().bad_lines(), 0);
}

}  // namespace
}  // namespace pstrain::data
