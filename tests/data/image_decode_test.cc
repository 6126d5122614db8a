#include "data/image_decode.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "testing/idx_files.h"
#include "testing/image_files.h"

namespace pstrain::data {
namespace {

using testing::EncodeJpeg;
using testing::EncodePng;
using testing::TestPattern;

double MeanAbsDiff(const std::vector<uint8_t>& a,
                   const std::vector<uint8_t>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += std::abs(int{a[i]} - int{b[i]});
  return sum / static_cast<double>(a.size());
}

TEST(ImageDecodeTest, JpegRoundTripWithinTolerance) {
  const auto pixels = TestPattern(48, 64, 3, 1);
  const std::string jpeg = EncodeJpeg(pixels, 48, 64, 95);
  auto size = PeekImageSize("a.jpg", jpeg);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(size->height, 48);
  EXPECT_EQ(size->width, 64);
  auto image = DecodeImage("a.jpg", jpeg);
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->height, 48);
  EXPECT_EQ(image->width, 64);
  EXPECT_EQ(image->full.height, 48);
  ASSERT_EQ(image->pixels.size(), pixels.size());
  EXPECT_LT(MeanAbsDiff(image->pixels, pixels), 6.0);
}

TEST(ImageDecodeTest, PngRoundTripIsExactForRgbGrayAndAlpha) {
  const auto rgb = TestPattern(9, 13, 3, 2);
  auto image = DecodeImage("a.png", EncodePng(rgb, 9, 13, 3));
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->pixels, rgb);

  const auto gray = TestPattern(9, 13, 1, 3);
  image = DecodeImage("g.png", EncodePng(gray, 9, 13, 1));
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  ASSERT_EQ(image->pixels.size(), gray.size() * 3);
  for (size_t i = 0; i < gray.size(); ++i) {
    for (int c = 0; c < 3; ++c)
      ASSERT_EQ(image->pixels[3 * i + c], gray[i]) << i;
  }

  const auto rgba = TestPattern(9, 13, 4, 4);
  image = DecodeImage("t.png", EncodePng(rgba, 9, 13, 4));
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  for (size_t i = 0; i < rgba.size() / 4; ++i) {
    for (int c = 0; c < 3; ++c)
      ASSERT_EQ(image->pixels[3 * i + c], rgba[4 * i + c]) << i;
  }
  auto size = PeekImageSize("t.png", EncodePng(rgba, 9, 13, 4));
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->height, 9);
  EXPECT_EQ(size->width, 13);
}

TEST(ImageDecodeTest, ScalesInTheDctDomainToTheSmallestFactorBigEnough) {
  // 1/4 of 400x500 is 100x125; 1/8 (50x63) is too small.
  const ImageSize s = ScaledJpegSize({400, 500}, {100, 100});
  EXPECT_EQ(s.height, 100);
  EXPECT_EQ(s.width, 125);
  const ImageSize none = ScaledJpegSize({400, 500}, {});
  EXPECT_EQ(none.height, 400);
  EXPECT_EQ(ScaledJpegSize({400, 500}, {401, 1}).height, 400);

  const auto pixels = TestPattern(160, 200, 3, 5);
  auto image = DecodeImage("big.jpg", EncodeJpeg(pixels, 160, 200), {40, 40});
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->height, 40);
  EXPECT_EQ(image->width, 50);
  EXPECT_EQ(image->full.height, 160);
  EXPECT_EQ(image->full.width, 200);
  EXPECT_EQ(image->pixels.size(), 40u * 50 * 3);
}

void ExpectCorruption(const std::string& path, const std::string& bytes) {
  auto image = DecodeImage(path, bytes);
  ASSERT_FALSE(image.ok()) << path;
  EXPECT_EQ(image.status().code(), StatusCode::kCorruption)
      << image.status().ToString();
  EXPECT_EQ(image.status().message().rfind(path + ": ", 0), 0u)
      << image.status().message();
}

TEST(ImageDecodeTest, TruncatedJpegIsCorruption) {
  const std::string jpeg = EncodeJpeg(TestPattern(64, 64, 3, 6), 64, 64);
  ExpectCorruption("dir/half.jpg", jpeg.substr(0, jpeg.size() / 2));
  // Only the end-of-image marker missing: libjpeg warns and pads; we fail.
  ExpectCorruption("dir/no_eoi.jpg", jpeg.substr(0, jpeg.size() - 2));
  ExpectCorruption("dir/header.jpg", jpeg.substr(0, 40));
  // The thread's decoder still works after those errors.
  auto good = DecodeImage("dir/good.jpg", jpeg);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->height, 64);
}

TEST(ImageDecodeTest, TextNamedJpgIsCorruption) {
  ExpectCorruption("dir/text.jpg", "hello, I am not an image\n");
  ExpectCorruption("dir/empty.jpg", "");
  auto size = PeekImageSize("dir/text.jpg", "hello");
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(size.status().code(), StatusCode::kCorruption);
}

TEST(ImageDecodeTest, TruncatedOrBitFlippedPngIsCorruption) {
  const std::string png = EncodePng(TestPattern(32, 32, 3, 7), 32, 32);
  ExpectCorruption("dir/half.png", png.substr(0, png.size() / 2));
  ExpectCorruption("dir/no_end.png", png.substr(0, png.size() - 12));
  std::string flipped = png;
  flipped[png.size() / 2] ^= 0x55;  // inside IDAT: a CRC or zlib error
  ExpectCorruption("dir/flipped.png", flipped);
}

TEST(ImageDecodeTest, ReadFileBytesReportsMissingFiles) {
  testing::ScratchDir dir;
  auto missing = ReadFileBytes(dir.File("nope.jpg"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  testing::WriteFile(dir.File("x.bin"), std::string("a\0b", 3));
  auto bytes = ReadFileBytes(dir.File("x.bin"));
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, std::string("a\0b", 3));
}

}  // namespace
}  // namespace pstrain::data
