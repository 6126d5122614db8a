#pragma once
// torchvision's image transforms on decoded RGB pixels (data/image_decode.h),
// written straight into float32 CHW normalized output:
//
//   train (ImageNet): RandomResizedCrop(size, scale=(0.08, 1),
//     ratio=(3/4, 4/3), bilinear) + RandomHorizontalFlip(0.5) + ToTensor +
//     Normalize(kImageNetNormalization);
//   eval (ImageNet): Resize(int(size * 256 / 224)) of the shorter side +
//     CenterCrop(size) + ToTensor + Normalize;
//   CIFAR-10 train: RandomCrop(32, padding=4) + RandomHorizontalFlip(0.5) +
//     ToTensor + Normalize(kCifar10Normalization).
//
// Random draws: every sample has a generator of its own, torch's CPU
// generator (mt19937, as torch.manual_seed makes it) seeded with
// SampleSeed(seed, epoch, index), and the parameters are drawn from it with
// the same torch calls, in the same order, as torchvision 0.14's get_params
// and RandomHorizontalFlip: with torch.manual_seed(SampleSeed(...)) Python
// draws the same crop and flip.
//
// Resampling is bilinear with align_corners=false, computed as libtorch's
// upsample_bilinear2d (= torchvision's resize of a uint8 tensor with
// antialias=False) and rounded to uint8 as torchvision does before
// ToTensor. libtorch 1.13 has no antialiased bilinear; torchvision on PIL
// images (its ImageFolder default) antialiases when it shrinks, so outputs
// differ from that pipeline, most where a crop is shrunk a lot.
//
// Stateless functions; thread-safe.

#include <array>
#include <cstdint>

#include <ATen/core/Generator.h>

#include "data/image_decode.h"

namespace pstrain::data {

/// Per-channel (x / 255 - mean) / std, RGB order.
struct Normalization {
  std::array<float, 3> mean;
  std::array<float, 3> std;
};
inline constexpr Normalization kImageNetNormalization{{0.485f, 0.456f, 0.406f},
                                                      {0.229f, 0.224f, 0.225f}};
inline constexpr Normalization kCifar10Normalization{
    {0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};

/// (seed, epoch, index) mixed by splitmix64 steps into one seed whose low
/// 32 bits (all mt19937 uses) depend on every bit of all three.
uint64_t SampleSeed(uint64_t seed, int64_t epoch, int64_t index);

/// torch's CPU generator seeded with SampleSeed(seed, epoch, index).
at::Generator SampleGenerator(uint64_t seed, int64_t epoch, int64_t index);

/// A rectangle of an image, pixels.
struct CropBox {
  int64_t top = 0;
  int64_t left = 0;
  int64_t height = 0;
  int64_t width = 0;
};

/// torchvision's RandomResizedCrop.get_params for an image of `full` size
/// with scale (0.08, 1) and ratio (3/4, 4/3): up to 10 attempts of a
/// uniform area fraction and a log-uniform aspect ratio, else the whole
/// image center-cropped to the nearest allowed ratio.
CropBox RandomResizedCropBox(ImageSize full, at::Generator& gen);

/// RandomHorizontalFlip(0.5)'s draw: torch.rand(1) < 0.5.
bool RandomFlip(at::Generator& gen);

/// The side that eval resizes the shorter side to: int(size * 256 / 224).
int64_t EvalResizeSide(int64_t size);

/// torchvision's Resize(shorter) of an image of `full` size: the shorter
/// side becomes `shorter`, the longer int(shorter * long / short).
ImageSize ResizedSize(ImageSize full, int64_t shorter);

/// The smallest size DecodeImage may scale a `full`-sized image to so that
/// `box` (full-size pixels) still covers at least size x size pixels.
ImageSize NeededForCrop(ImageSize full, CropBox box, int64_t size);

/// Crop `box` (in the coordinates of image.full, scaled to the decoded
/// size), resize it to size x size, flip it if `flip`, round to uint8 and
/// normalize. out: float32 [3, size, size], contiguous, `3*size*size`
/// floats. REQUIRES: box inside image.full, size >= 1.
void ResizedCrop(const Image& image, CropBox box, int64_t size, bool flip,
                 const Normalization& norm, float* out);

/// Resize of the shorter side to `resize` (as ResizedSize, of image.full),
/// then CenterCrop(size), round to uint8 and normalize. out: float32
/// [3, size, size]. REQUIRES: size <= resize.
void ResizeCenterCrop(const Image& image, int64_t resize, int64_t size,
                      const Normalization& norm, float* out);

/// RandomCrop(side, padding)'s draw for a side x side image: the offset
/// (top, left), each in [0, 2 * padding], of the crop in the padded image.
CropBox RandomPaddedCropBox(int64_t side, int64_t padding, at::Generator& gen);

/// Zero-pads the uint8 CHW RGB image `chw` (side x side) by `padding`, takes
/// the side x side crop at `box` (RandomPaddedCropBox), flips it if `flip`,
/// normalizes. out: float32 [3, side, side].
void PaddedCrop(const uint8_t* chw, int64_t side, int64_t padding, CropBox box,
                bool flip, const Normalization& norm, float* out);

}  // namespace pstrain::data
