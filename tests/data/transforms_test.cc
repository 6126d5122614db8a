#include "data/transforms.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::data {
namespace {

// An RGB image whose pixel (y, x, c) is f(y, x, c).
template <typename F>
Image MakeImage(int64_t h, int64_t w, F f) {
  Image image;
  image.height = image.full.height = h;
  image.width = image.full.width = w;
  image.pixels.resize(h * w * 3);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c)
        image.pixels[(y * w + x) * 3 + c] = static_cast<uint8_t>(f(y, x, c));
    }
  }
  return image;
}

float Normalized(int v, int c,
                 const Normalization& n = kImageNetNormalization) {
  return (static_cast<float>(v) / 255.0f - n.mean[c]) / n.std[c];
}

TEST(TransformsTest, SampleSeedDependsOnSeedEpochAndIndex) {
  EXPECT_EQ(SampleSeed(1, 2, 3), SampleSeed(1, 2, 3));
  EXPECT_NE(SampleSeed(1, 2, 3), SampleSeed(2, 2, 3));
  EXPECT_NE(SampleSeed(1, 2, 3), SampleSeed(1, 3, 3));
  EXPECT_NE(SampleSeed(1, 2, 3), SampleSeed(1, 2, 4));
  EXPECT_NE(SampleSeed(1, 2, 3) & 0xffffffffu,
            SampleSeed(1, 3, 2) & 0xffffffffu);
}

TEST(TransformsTest, RandomResizedCropIsDeterministicPerSampleAndInside) {
  const ImageSize full{375, 500};
  int differing = 0;
  for (int64_t i = 0; i < 50; ++i) {
    at::Generator a = SampleGenerator(7, 1, i);
    at::Generator b = SampleGenerator(7, 1, i);
    const CropBox x = RandomResizedCropBox(full, a);
    const CropBox y = RandomResizedCropBox(full, b);
    EXPECT_EQ(x.top, y.top);
    EXPECT_EQ(x.left, y.left);
    EXPECT_EQ(x.height, y.height);
    EXPECT_EQ(x.width, y.width);
    EXPECT_EQ(RandomFlip(a), RandomFlip(b));
    EXPECT_GE(x.top, 0);
    EXPECT_GE(x.left, 0);
    EXPECT_LE(x.top + x.height, full.height);
    EXPECT_LE(x.left + x.width, full.width);
    // Area within (0.08, 1) of the image, up to rounding.
    const double area = static_cast<double>(x.height * x.width) / (375 * 500);
    EXPECT_GT(area, 0.07);
    EXPECT_LE(area, 1.0);
    at::Generator other = SampleGenerator(7, 2, i);
    const CropBox z = RandomResizedCropBox(full, other);
    differing += z.top != x.top || z.width != x.width;
  }
  EXPECT_GT(differing, 40);
}

TEST(TransformsTest, RandomResizedCropFallsBackToACenterCropOfAllowedRatio) {
  at::Generator gen = SampleGenerator(1, 0, 0);
  // No crop of area >= 8% and ratio <= 4/3 fits in 10 rows of 1000.
  const CropBox box = RandomResizedCropBox({10, 1000}, gen);
  EXPECT_EQ(box.height, 10);
  EXPECT_EQ(box.width, 13);
  EXPECT_EQ(box.top, 0);
  EXPECT_EQ(box.left, (1000 - 13) / 2);
}

TEST(TransformsTest, ResizedCropOfTheWholeImageAtItsSizeIsTheImage) {
  const Image image = MakeImage(
      8, 8, [](int64_t y, int64_t x, int c) { return 30 * c + 7 * y + 3 * x; });
  std::vector<float> out(3 * 8 * 8), flipped(3 * 8 * 8);
  ResizedCrop(image, {0, 0, 8, 8}, 8, false, kImageNetNormalization,
              out.data());
  ResizedCrop(image, {0, 0, 8, 8}, 8, true, kImageNetNormalization,
              flipped.data());
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 8; ++y) {
      for (int x = 0; x < 8; ++x) {
        const float want = Normalized(30 * c + 7 * y + 3 * x, c);
        EXPECT_EQ(out[(c * 8 + y) * 8 + x], want);
        EXPECT_EQ(flipped[(c * 8 + y) * 8 + (7 - x)], want);
      }
    }
  }
}

TEST(TransformsTest, EvalResizeAndCenterCropMatchAHandComputation) {
  EXPECT_EQ(EvalResizeSide(224), 256);
  EXPECT_EQ(ResizedSize({375, 500}, 256).width, 341);
  EXPECT_EQ(ResizedSize({500, 375}, 256).height, 341);
  // 4x6 resized to 2x3 (scale 2 on both axes): each output pixel is the
  // mean of a 2x2 block; CenterCrop(2) keeps columns round(0.5) = 0 and 1.
  const Image image = MakeImage(4, 6, [](int64_t y, int64_t x, int c) {
    return 10 * y + 3 * x + 50 * c;
  });
  std::vector<float> out(3 * 2 * 2);
  ResizeCenterCrop(image, 2, 2, kImageNetNormalization, out.data());
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 2; ++y) {
      for (int x = 0; x < 2; ++x) {
        // Mean of rows 2y, 2y+1 and columns 2x, 2x+1: 20y + 6x + 6.5 + 50c,
        // rounded half to even (as torch.round) to 20y + 6x + 6 + 50c.
        const int v = 20 * y + 6 * x + 6 + 50 * c;
        EXPECT_EQ(out[(c * 2 + y) * 2 + x], Normalized(v, c)) << c << y << x;
      }
    }
  }
}

TEST(TransformsTest, PaddedCropPadsWithZeroAndFlips) {
  std::vector<uint8_t> chw(3 * 4 * 4);
  for (size_t i = 0; i < chw.size(); ++i)
    chw[i] = static_cast<uint8_t>(i * 5);
  std::vector<float> center(chw.size()), corner(chw.size());
  PaddedCrop(chw.data(), 4, 2, {2, 2, 4, 4}, false, kCifar10Normalization,
             center.data());
  PaddedCrop(chw.data(), 4, 2, {0, 0, 4, 4}, true, kCifar10Normalization,
             corner.data());
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 4; ++x) {
        const int i = (c * 4 + y) * 4 + x;
        EXPECT_EQ(center[i], Normalized(chw[i], c, kCifar10Normalization));
        // corner: rows -2..1 and columns -2..1 of the image, mirrored.
        const int sx = (3 - x) - 2, sy = y - 2;
        const int v = sx >= 0 && sy >= 0 ? chw[(c * 4 + sy) * 4 + sx] : 0;
        EXPECT_EQ(corner[i], Normalized(v, c, kCifar10Normalization));
      }
    }
  }
  at::Generator gen = SampleGenerator(3, 0, 9);
  const CropBox box = RandomPaddedCropBox(32, 4, gen);
  EXPECT_LE(box.top, 8);
  EXPECT_LE(box.left, 8);
  EXPECT_EQ(box.height, 32);
}

TEST(TransformsTest, NeededForCropKeepsTheCropAtLeastTheOutputSize) {
  const ImageSize need = NeededForCrop({375, 500}, {0, 0, 300, 250}, 224);
  EXPECT_EQ(need.height, (375 * 224 + 299) / 300);
  EXPECT_EQ(need.width, (500 * 224 + 249) / 250);
}

}  // namespace
}  // namespace pstrain::data
