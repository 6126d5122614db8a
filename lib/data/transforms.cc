#include "data/transforms.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "util/check.h"

namespace pstrain::data {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// torch.empty(1).uniform_(from, to).item() on a float32 tensor.
float Uniform(double from, double to, at::Generator& gen) {
  return at::empty({1}, at::kFloat).uniform_(from, to, gen).item<float>();
}

// torch.randint(low, high, size=(1,)).item().
int64_t RandInt(int64_t low, int64_t high, at::Generator& gen) {
  return at::randint(low, high, {1}, gen, at::kLong).item<int64_t>();
}

// Python's int(round(x)): round half to even.
int64_t RoundHalfEven(double x) {
  return static_cast<int64_t>(std::nearbyint(x));
}

// Where output index d of one axis reads its two source pixels, and with
// what weights: libtorch's compute_indices_weights_linear (align_corners
// false) for an input of the box [origin, origin + extent) of an axis whose
// last pixel is `last`, with the output shifted by `offset` pixels.
struct Axis {
  std::vector<int64_t> i0, i1;
  std::vector<float> w0, w1;
};

Axis MakeAxis(int64_t out, int64_t offset, double origin, double extent,
              int64_t last, bool reverse) {
  Axis a;
  a.i0.resize(out);
  a.i1.resize(out);
  a.w0.resize(out);
  a.w1.resize(out);
  const float scale = static_cast<float>(extent) / static_cast<float>(out);
  const int64_t hi = std::min<int64_t>(
      last, static_cast<int64_t>(std::ceil(origin + extent)) - 1);
  for (int64_t d = 0; d < out; ++d) {
    float r = scale * (static_cast<float>(d + offset) + 0.5f) - 0.5f;
    if (r < 0)
      r = 0;
    const double at = origin + r;
    int64_t i = static_cast<int64_t>(std::floor(at));
    float w1 = static_cast<float>(at - static_cast<double>(i));
    if (i >= hi) {
      i = hi;
      w1 = 0;
    }
    const int64_t k = reverse ? out - 1 - d : d;
    a.i0[k] = i;
    a.i1[k] = i < hi ? i + 1 : hi;
    a.w1[k] = std::min(std::max(w1, 0.0f), 1.0f);
    a.w0[k] = 1.0f - a.w1[k];
  }
  return a;
}

// normalized[c][v] for every uint8 value v: ToTensor then Normalize, in
// float32 as torchvision computes them.
using Lut = std::array<std::array<float, 256>, 3>;

Lut MakeLut(const Normalization& n) {
  Lut lut;
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v)
      lut[c][v] = (static_cast<float>(v) / 255.0f - n.mean[c]) / n.std[c];
  }
  return lut;
}

// Rounds half to even, as torch.round, for 0 <= v < 2^22.
inline int RoundToByte(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return static_cast<int>((v + kMagic) - kMagic);
}

// Bilinear sampling of `image` at the rows of `ya` and columns of `xa`.
void Sample(const Image& image, const Axis& ya, const Axis& xa,
            const Normalization& norm, float* out) {
  const Lut lut = MakeLut(norm);
  const int64_t oh = static_cast<int64_t>(ya.i0.size());
  const int64_t ow = static_cast<int64_t>(xa.i0.size());
  const int64_t plane = oh * ow;
  const uint8_t* px = image.pixels.data();
  const int64_t stride = image.width * 3;
  for (int64_t y = 0; y < oh; ++y) {
    const uint8_t* r0 = px + ya.i0[y] * stride;
    const uint8_t* r1 = px + ya.i1[y] * stride;
    const float wy0 = ya.w0[y], wy1 = ya.w1[y];
    float* o = out + y * ow;
    for (int64_t x = 0; x < ow; ++x) {
      const int64_t c0 = xa.i0[x] * 3, c1 = xa.i1[x] * 3;
      const float wx0 = xa.w0[x], wx1 = xa.w1[x];
      for (int c = 0; c < 3; ++c) {
        const float t0 = r0[c0 + c] * wx0 + r0[c1 + c] * wx1;
        const float t1 = r1[c0 + c] * wx0 + r1[c1 + c] * wx1;
        o[c * plane + x] = lut[c][RoundToByte(t0 * wy0 + t1 * wy1)];
      }
    }
  }
}

}  // namespace

uint64_t SampleSeed(uint64_t seed, int64_t epoch, int64_t index) {
  uint64_t x = SplitMix(seed);
  x = SplitMix(x ^ static_cast<uint64_t>(epoch));
  x = SplitMix(x ^ static_cast<uint64_t>(index));
  return x ^ (x >> 32);
}

at::Generator SampleGenerator(uint64_t seed, int64_t epoch, int64_t index) {
  return at::make_generator<at::CPUGeneratorImpl>(
      SampleSeed(seed, epoch, index));
}

CropBox RandomResizedCropBox(ImageSize full, at::Generator& gen) {
  const double height = static_cast<double>(full.height);
  const double width = static_cast<double>(full.width);
  const double area = height * width;
  // torch.log(torch.tensor((3/4, 4/3))): float32, computed by torch.
  static const std::array<float, 2> kLogRatio = [] {
    at::Tensor t = at::log(at::tensor({3.0f / 4.0f, 4.0f / 3.0f}));
    return std::array<float, 2>{t[0].item<float>(), t[1].item<float>()};
  }();
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * Uniform(0.08, 1.0, gen);
    const float log_ratio = Uniform(kLogRatio[0], kLogRatio[1], gen);
    const double aspect =
        at::exp(at::full({1}, log_ratio, at::kFloat)).item<float>();
    const int64_t w = RoundHalfEven(std::sqrt(target_area * aspect));
    const int64_t h = RoundHalfEven(std::sqrt(target_area / aspect));
    if (0 < w && w <= full.width && 0 < h && h <= full.height) {
      const int64_t top = RandInt(0, full.height - h + 1, gen);
      const int64_t left = RandInt(0, full.width - w + 1, gen);
      return {top, left, h, w};
    }
  }
  const double in_ratio = width / height;
  int64_t w = full.width, h = full.height;
  if (in_ratio < 3.0 / 4.0) {
    h = RoundHalfEven(static_cast<double>(w) / (3.0 / 4.0));
  } else if (in_ratio > 4.0 / 3.0) {
    w = RoundHalfEven(static_cast<double>(h) * (4.0 / 3.0));
  }
  return {(full.height - h) / 2, (full.width - w) / 2, h, w};
}

bool RandomFlip(at::Generator& gen) {
  return at::rand({1}, gen, at::kFloat).item<float>() < 0.5f;
}

int64_t EvalResizeSide(int64_t size) {
  return size * 256 / 224;
}

ImageSize ResizedSize(ImageSize full, int64_t shorter) {
  if (full.width <= full.height)
    return {shorter * full.height / full.width, shorter};
  return {shorter, shorter * full.width / full.height};
}

ImageSize NeededForCrop(ImageSize full, CropBox box, int64_t size) {
  auto need = [size](int64_t whole, int64_t part) {
    return (whole * size + part - 1) / part;
  };
  return {need(full.height, box.height), need(full.width, box.width)};
}

void ResizedCrop(const Image& image, CropBox box, int64_t size, bool flip,
                 const Normalization& norm, float* out) {
  PS_CHECK(size >= 1 && box.top >= 0 && box.left >= 0 && box.height >= 1 &&
           box.width >= 1 && box.top + box.height <= image.full.height &&
           box.left + box.width <= image.full.width)
      << "crop box outside the image";
  const double sy = static_cast<double>(image.height) / image.full.height;
  const double sx = static_cast<double>(image.width) / image.full.width;
  const Axis ya =
      MakeAxis(size, 0, box.top * sy, box.height * sy, image.height - 1, false);
  const Axis xa =
      MakeAxis(size, 0, box.left * sx, box.width * sx, image.width - 1, flip);
  Sample(image, ya, xa, norm, out);
}

void ResizeCenterCrop(const Image& image, int64_t resize, int64_t size,
                      const Normalization& norm, float* out) {
  const ImageSize r = ResizedSize(image.full, resize);
  PS_CHECK(size >= 1 && size <= r.height && size <= r.width)
      << "center crop " << size << " of a resize to " << resize;
  // CenterCrop: int(round((resized - size) / 2.0)).
  const int64_t top = RoundHalfEven((r.height - size) / 2.0);
  const int64_t left = RoundHalfEven((r.width - size) / 2.0);
  // Resizing the decoded image (maybe DCT-scaled) to r, as libtorch does,
  // then keeping rows [top, top + size) and columns [left, left + size).
  Axis ya = MakeAxis(r.height, 0, 0, image.height, image.height - 1, false);
  Axis xa = MakeAxis(r.width, 0, 0, image.width, image.width - 1, false);
  auto keep = [size](Axis* a, int64_t from) {
    for (auto* v : {&a->i0, &a->i1}) {
      v->erase(v->begin(), v->begin() + from);
      v->resize(size);
    }
    for (auto* v : {&a->w0, &a->w1}) {
      v->erase(v->begin(), v->begin() + from);
      v->resize(size);
    }
  };
  keep(&ya, top);
  keep(&xa, left);
  Sample(image, ya, xa, norm, out);
}

CropBox RandomPaddedCropBox(int64_t side, int64_t padding, at::Generator& gen) {
  const int64_t padded = side + 2 * padding;
  if (padding == 0)
    return {0, 0, side, side};
  const int64_t top = RandInt(0, padded - side + 1, gen);
  const int64_t left = RandInt(0, padded - side + 1, gen);
  return {top, left, side, side};
}

void PaddedCrop(const uint8_t* chw, int64_t side, int64_t padding, CropBox box,
                bool flip, const Normalization& norm, float* out) {
  const Lut lut = MakeLut(norm);
  const int64_t plane = side * side;
  for (int c = 0; c < 3; ++c) {
    for (int64_t y = 0; y < side; ++y) {
      const int64_t sy = y + box.top - padding;
      float* o = out + c * plane + y * side;
      for (int64_t x = 0; x < side; ++x) {
        const int64_t sx = (flip ? side - 1 - x : x) + box.left - padding;
        const bool inside = sy >= 0 && sy < side && sx >= 0 && sx < side;
        o[x] = lut[c][inside ? chw[c * plane + sy * side + sx] : 0];
      }
    }
  }
}

}  // namespace pstrain::data
