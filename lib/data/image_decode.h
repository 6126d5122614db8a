#pragma once
// Decoding of JPEG (libjpeg-turbo's TurboJPEG API) and PNG (libpng) files
// to 8-bit RGB pixels. Stateless functions; thread-safe (each thread keeps a
// TurboJPEG handle of its own).
//
// A file that does not decode completely is an error, never a half-decoded
// image: TurboJPEG's warnings (a truncated file, corrupt data) are errors
// here, and so are libpng's.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace pstrain::data {

/// Width and height of an image file, pixels, as stored (before any
/// scaling).
struct ImageSize {
  int64_t height = 0;
  int64_t width = 0;
};

/// Decoded pixels: uint8 HWC RGB, row-major, `height * width * 3` bytes.
/// `full` is the size the file stores; `height` x `width` may be smaller
/// when the JPEG was decoded with DCT scaling (DecodeImage).
struct Image {
  int64_t height = 0;
  int64_t width = 0;
  ImageSize full;
  std::vector<uint8_t> pixels;
};

/// The whole file at `path`. kNotFound when it does not exist, kIOError on
/// a read error.
Result<std::string> ReadFileBytes(const std::string& path);

/// The stored size of the JPEG or PNG image in `bytes` (headers only).
/// kCorruption naming `path` when `bytes` is neither or its header is bad.
Result<ImageSize> PeekImageSize(const std::string& path,
                                std::string_view bytes);

/// Decodes the JPEG or PNG image in `bytes` (told apart by their
/// signatures, not by the name) to RGB: grayscale is replicated, palette
/// expanded, alpha dropped (PIL's convert("RGB")), 16-bit samples keep their
/// high byte; CMYK JPEGs (Adobe's inverted form) become R = C*K/255 etc.
///
/// A JPEG is decoded with TurboJPEG's DCT-domain scaling by the smallest
/// factor of 1/2, 1/4 and 1/8 (the others, 3/8..7/8, decode slower than no
/// scaling in libjpeg-turbo 2.1: no SIMD) whose result is still at least
/// `need.width` x `need.height` (a field <= 0 sets no bound on its side;
/// ImageSize{}, both zero, decodes at full size). A PNG is always
/// decoded at full size. Image::full holds the stored size either way.
///
/// Errors: kCorruption "PATH: reason" for anything that is not a complete,
/// valid JPEG or PNG (truncated data, a text file named .jpg, bad CRCs).
Result<Image> DecodeImage(const std::string& path, std::string_view bytes,
                          ImageSize need = {});

/// The size TurboJPEG's DCT scaling gives a `full`-sized JPEG when asked
/// for at least `need` (DecodeImage's rule); `full` when no factor below 1
/// is big enough. Exposed for tests and the benchmark.
ImageSize ScaledJpegSize(ImageSize full, ImageSize need);

}  // namespace pstrain::data
