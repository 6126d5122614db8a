#pragma once
// Test helpers for lib/data's image sources: real JPEG (TurboJPEG) and PNG
// (libpng) files of a smooth test pattern, and whole ImageFolder trees
// (DIR/train/<class>/..., DIR/val/<class>/...) of them.

#include <cstdint>
#include <string>
#include <vector>

namespace pstrain::data::testing {

/// A smooth pattern of `height` x `width` uint8 pixels with `channels`
/// (1 gray, 3 RGB, 4 RGBA) interleaved (HWC): per-`tint` base colours,
/// gradients along both axes and a little deterministic noise, so that JPEG
/// sizes and decode times are realistic and images of two tints differ.
std::vector<uint8_t> TestPattern(int64_t height, int64_t width, int channels,
                                 int tint);

/// The JPEG bytes (TurboJPEG, 4:2:0, `quality`) of RGB HWC `pixels`.
/// Aborts the test binary (PS_CHECK) if TurboJPEG fails.
std::string EncodeJpeg(const std::vector<uint8_t>& pixels, int64_t height,
                       int64_t width, int quality = 90);

/// The PNG bytes (libpng, 8 bits per sample) of HWC `pixels` of `channels`
/// (1 gray, 3 RGB, 4 RGBA).
std::string EncodePng(const std::vector<uint8_t>& pixels, int64_t height,
                      int64_t width, int channels = 3);

/// Writes `bytes` to `path`; aborts (PS_CHECK) on failure.
void WriteFile(const std::string& path, const std::string& bytes);

/// Writes an ImageFolder tree under `dir`: for both `train` and `val`, for
/// class c of `classes`, files img0.jpg, img1.png, img2.jpg, ...
/// (`per_class` of them, even i JPEG, odd i PNG) of TestPattern(size,
/// size * 4 / 3, 3, c + i), i.e. `size` rows by size*4/3 columns. With
/// `with_corrupt`, DIR/train/<classes[0]>/ also gets "bad_text.jpg" (a text
/// file) and "bad_truncated.jpg" (a real JPEG cut to half its bytes), which
/// sort after the good ones ("b" < "i").
void WriteImageFolder(const std::string& dir,
                      const std::vector<std::string>& classes, int per_class,
                      int64_t size, bool with_corrupt);

}  // namespace pstrain::data::testing
