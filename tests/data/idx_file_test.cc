#include "data/idx_file.h"

#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "testing/idx_files.h"

namespace pstrain::data {
namespace {

using testing::IdxBytes;
using testing::ImagesBytes;
using testing::LabelsBytes;
using testing::ScratchDir;
using testing::WriteGz;
using testing::WritePlain;

/// Expects `result` to fail with `code` and exactly `message`.
void ExpectError(const Result<torch::Tensor>& result, StatusCode code,
                 const std::string& message) {
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), code) << result.status().ToString();
  EXPECT_EQ(result.status().message(), message);
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(IdxFileTest, ReadsPlainImages) {
  ScratchDir dir;
  const std::string path = dir.File("images");
  WritePlain(path, ImagesBytes(2));
  Result<torch::Tensor> images = ReadIdxFile(path, IdxKind::kImages);
  ASSERT_TRUE(images.ok()) << images.status().ToString();
  EXPECT_EQ(images->scalar_type(), torch::kUInt8);
  EXPECT_EQ(images->sizes(), torch::IntArrayRef({2, 28, 28}));
  EXPECT_EQ((*images)[0][0][1].item<int>(), 7);
  EXPECT_EQ((*images)[1][27][27].item<int>(), (2 * 784 - 1) * 7 % 256);
}

TEST(IdxFileTest, ReadsGzLabels) {
  ScratchDir dir;
  const std::string path = dir.File("labels.gz");
  WriteGz(path, LabelsBytes(13));
  Result<torch::Tensor> labels = ReadIdxFile(path, IdxKind::kLabels);
  ASSERT_TRUE(labels.ok()) << labels.status().ToString();
  EXPECT_EQ(labels->scalar_type(), torch::kUInt8);
  EXPECT_EQ(labels->sizes(), torch::IntArrayRef({13}));
  EXPECT_EQ((*labels)[12].item<int>(), 2);
}

TEST(IdxFileTest, PlainAndGzReadAlike) {
  ScratchDir dir;
  WritePlain(dir.File("a"), ImagesBytes(3, 5, 4));
  WriteGz(dir.File("a.gz"), ImagesBytes(3, 5, 4));
  Result<torch::Tensor> plain = ReadIdxFile(dir.File("a"), IdxKind::kImages);
  Result<torch::Tensor> gz = ReadIdxFile(dir.File("a.gz"), IdxKind::kImages);
  ASSERT_TRUE(plain.ok() && gz.ok());
  EXPECT_EQ(plain->sizes(), torch::IntArrayRef({3, 5, 4}));
  EXPECT_TRUE(plain->equal(*gz));
}

TEST(IdxFileTest, ReadsEmptyFileOfZeroItems) {
  Result<torch::Tensor> images =
      ParseIdx("x", IdxBytes(0x00000803, {0, 28, 28}, ""), IdxKind::kImages);
  ASSERT_TRUE(images.ok()) << images.status().ToString();
  EXPECT_EQ(images->sizes(), torch::IntArrayRef({0, 28, 28}));
}

TEST(IdxFileTest, MissingFileIsNotFound) {
  ScratchDir dir;
  const std::string path = dir.File("nope");
  ExpectError(ReadIdxFile(path, IdxKind::kImages), StatusCode::kNotFound,
              path + ": no such file");
}

TEST(IdxFileTest, TruncatedDataIsCorruption) {
  ScratchDir dir;
  const std::string path = dir.File("images");
  std::string bytes = ImagesBytes(2);
  bytes.pop_back();
  WritePlain(path, bytes);
  ExpectError(ReadIdxFile(path, IdxKind::kImages), StatusCode::kCorruption,
              path + ": data size is 1567 bytes, but dims 2x28x28 need 1568");
}

TEST(IdxFileTest, TruncatedGzIsCorruption) {
  ScratchDir dir;
  const std::string whole = dir.File("whole.gz");
  WriteGz(whole, ImagesBytes(50));
  std::string bytes = ReadBytes(whole);
  const std::string path = dir.File("cut.gz");
  WritePlain(path, bytes.substr(0, bytes.size() / 2));
  Result<torch::Tensor> result = ReadIdxFile(path, IdxKind::kImages);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(result.status().message().rfind(path + ": ", 0), 0u)
      << result.status().message();
}

TEST(IdxFileTest, CorruptGzIsCorruption) {
  ScratchDir dir;
  const std::string whole = dir.File("whole.gz");
  WriteGz(whole, ImagesBytes(50));
  std::string bytes = ReadBytes(whole);
  bytes[bytes.size() / 2] ^= 0x55;
  const std::string path = dir.File("flipped.gz");
  WritePlain(path, bytes);
  Result<torch::Tensor> result = ReadIdxFile(path, IdxKind::kImages);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(result.status().message().rfind(path + ": ", 0), 0u)
      << result.status().message();
}

TEST(IdxFileTest, TrailingBytesAreCorruption) {
  ExpectError(ParseIdx("f", LabelsBytes(3) + "zz", IdxKind::kLabels),
              StatusCode::kCorruption,
              "f: data size is 5 bytes, but dims 3 need 3");
}

TEST(IdxFileTest, WrongMagicIsCorruption) {
  ScratchDir dir;
  const std::string path = dir.File("labels");
  WritePlain(path, LabelsBytes(3));
  ExpectError(ReadIdxFile(path, IdxKind::kImages), StatusCode::kCorruption,
              path +
                  ": magic number is 0x00000801, expected 0x00000803 "
                  "(IDX images)");
  ExpectError(ParseIdx("g", ImagesBytes(1), IdxKind::kLabels),
              StatusCode::kCorruption,
              "g: magic number is 0x00000803, expected 0x00000801 "
              "(IDX labels)");
}

TEST(IdxFileTest, ShortFileIsCorruption) {
  ExpectError(ParseIdx("e", "", IdxKind::kLabels), StatusCode::kCorruption,
              "e: magic number is truncated: file is 0 bytes");
  ExpectError(
      ParseIdx("h", IdxBytes(0x00000803, {1, 28}, ""), IdxKind::kImages),
      StatusCode::kCorruption,
      "h: header is truncated: 12 bytes, need 16 for 3 dims");
}

TEST(IdxFileTest, AbsurdDimsAreCorruptionWithoutAllocating) {
  std::string bytes =
      IdxBytes(0x00000803, {0xffffffff, 0xffffffff, 0xffffffff}, "abc");
  Result<torch::Tensor> result = ParseIdx("big", bytes, IdxKind::kImages);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kCorruption);
  EXPECT_NE(
      result.status().message().find("big: data size is 3 bytes, but dims "
                                     "4294967295x4294967295x4294967295 need"),
      std::string::npos)
      << result.status().message();
}

}  // namespace
}  // namespace pstrain::data
