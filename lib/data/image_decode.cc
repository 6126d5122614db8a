#include "data/image_decode.h"

#include <png.h>
#include <turbojpeg.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "util/check.h"

namespace pstrain::data {
namespace {

// Bigger claims in a header are refused rather than allocated (a corrupt or
// hostile header could ask for terabytes). ImageNet's largest is ~ 10 MP.
constexpr int64_t kMaxPixels = int64_t{1} << 27;

bool IsJpeg(std::string_view b) {
  return b.size() >= 3 && static_cast<uint8_t>(b[0]) == 0xFF &&
         static_cast<uint8_t>(b[1]) == 0xD8 &&
         static_cast<uint8_t>(b[2]) == 0xFF;
}

bool IsPng(std::string_view b) {
  static const char kSig[8] = {'\x89', 'P', 'N', 'G', '\r', '\n', '\x1a', '\n'};
  return b.size() >= 8 && std::memcmp(b.data(), kSig, 8) == 0;
}

Status Bad(const std::string& path, const std::string& why) {
  return Corruption(path + ": " + why);
}

// One TurboJPEG decompressor per thread, destroyed with the thread.
struct TjHandle {
  tjhandle handle = nullptr;
  ~TjHandle() {
    if (handle != nullptr)
      tjDestroy(handle);
  }
};

thread_local TjHandle tj_handle;

tjhandle Decompressor() {
  TjHandle& t = tj_handle;
  if (t.handle == nullptr)
    t.handle = tjInitDecompress();
  PS_CHECK(t.handle != nullptr)
      << "tjInitDecompress: " << tjGetErrorStr2(nullptr);
  return t.handle;
}

// After an error TurboJPEG 2.1 may leave the handle's decoder in a state
// that garbles the next header read, so the handle is replaced: called with
// the error message taken.
void DropDecompressor() {
  if (tj_handle.handle != nullptr)
    tjDestroy(tj_handle.handle);
  tj_handle.handle = nullptr;
}

const auto* Jpeg(std::string_view b) {
  return reinterpret_cast<const unsigned char*>(b.data());
}

struct JpegHeader {
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
};

Result<JpegHeader> ReadJpegHeader(tjhandle tj, const std::string& path,
                                  std::string_view b) {
  JpegHeader h;
  if (tjDecompressHeader3(tj, Jpeg(b), b.size(), &h.width, &h.height,
                          &h.subsamp, &h.colorspace) != 0) {
    Status bad =
        Bad(path, std::string("bad JPEG header: ") + tjGetErrorStr2(tj));
    DropDecompressor();
    return bad;
  }
  if (h.width <= 0 || h.height <= 0 ||
      int64_t{h.width} * h.height > kMaxPixels) {
    return Bad(path, "JPEG of " + std::to_string(h.width) + "x" +
                         std::to_string(h.height) + " pixels refused");
  }
  return h;
}

// Inverted (Adobe) CMYK, as libjpeg leaves it, to RGB.
void CmykToRgb(const std::vector<uint8_t>& cmyk, std::vector<uint8_t>* rgb) {
  const size_t n = cmyk.size() / 4;
  rgb->resize(n * 3);
  for (size_t i = 0; i < n; ++i) {
    const unsigned k = cmyk[4 * i + 3];
    for (int c = 0; c < 3; ++c)
      (*rgb)[3 * i + c] = static_cast<uint8_t>(cmyk[4 * i + c] * k / 255);
  }
}

Result<Image> DecodeJpeg(const std::string& path, std::string_view b,
                         ImageSize need) {
  tjhandle tj = Decompressor();
  PS_ASSIGN_OR_RETURN(JpegHeader h, ReadJpegHeader(tj, path, b));
  Image image;
  image.full = {h.height, h.width};
  const ImageSize scaled = ScaledJpegSize(image.full, need);
  image.height = scaled.height;
  image.width = scaled.width;
  const bool cmyk = h.colorspace == TJCS_CMYK || h.colorspace == TJCS_YCCK;
  std::vector<uint8_t> cmyk_pixels;
  std::vector<uint8_t>& out = cmyk ? cmyk_pixels : image.pixels;
  out.resize(static_cast<size_t>(scaled.height * scaled.width) *
             (cmyk ? 4 : 3));
  // A warning (truncated or corrupt data) stops the decode and fails it.
  if (tjDecompress2(tj, Jpeg(b), b.size(), out.data(),
                    static_cast<int>(scaled.width), 0,
                    static_cast<int>(scaled.height),
                    cmyk ? TJPF_CMYK : TJPF_RGB, TJFLAG_STOPONWARNING) != 0) {
    Status bad = Bad(path, std::string("bad JPEG data: ") + tjGetErrorStr2(tj));
    DropDecompressor();
    return bad;
  }
  if (cmyk)
    CmykToRgb(cmyk_pixels, &image.pixels);
  return image;
}

// libpng reads from memory through this; its error handler longjmps.
struct PngSource {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  char message[200] = {0};
};

void PngError(png_structp png, png_const_charp message) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof(src->message), "%s", message);
  png_longjmp(png, 1);
}

void PngWarning(png_structp, png_const_charp) {}

void PngRead(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (src->size - src->pos < n)
    png_error(png, "truncated file");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

// The body of ReadPng, below its setjmp: every C++ object it touches lives
// in the caller, so that a longjmp out of libpng skips no destructor.
void ReadPngBody(png_structp png, png_infop info, Image* image,
                 std::vector<png_bytep>* rows) {
  png_read_info(png, info);
  png_uint_32 width = 0, height = 0;
  int depth = 0, color = 0;
  png_get_IHDR(png, info, &width, &height, &depth, &color, nullptr, nullptr,
               nullptr);
  if (int64_t{width} * height > kMaxPixels)
    png_error(png, "image too large");
  if (color == PNG_COLOR_TYPE_PALETTE)
    png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
    png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16)
    png_set_strip_16(png);
  if (!(color & PNG_COLOR_MASK_COLOR))
    png_set_gray_to_rgb(png);
  if (color & PNG_COLOR_MASK_ALPHA)
    png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != size_t{width} * 3)
    png_error(png, "unexpected row size after conversion to RGB");
  image->height = image->full.height = height;
  image->width = image->full.width = width;
  image->pixels.resize(size_t{width} * height * 3);
  rows->resize(height);
  for (png_uint_32 y = 0; y < height; ++y)
    (*rows)[y] = image->pixels.data() + size_t{y} * width * 3;
  png_read_image(png, rows->data());
  png_read_end(png, nullptr);
}

// Whether the PNG decoded; src->message says why not.
bool ReadPng(PngSource* src, Image* image, std::vector<png_bytep>* rows) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, src, PngError, PngWarning);
  PS_CHECK(png != nullptr) << "png_create_read_struct failed";
  png_infop info = png_create_info_struct(png);
  PS_CHECK(info != nullptr) << "png_create_info_struct failed";
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, src, PngRead);
  ReadPngBody(png, info, image, rows);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

Result<Image> DecodePng(const std::string& path, std::string_view b) {
  PngSource src;
  src.data = reinterpret_cast<const uint8_t*>(b.data());
  src.size = b.size();
  Image image;
  std::vector<png_bytep> rows;
  if (!ReadPng(&src, &image, &rows))
    return Bad(path, std::string("bad PNG: ") + src.message);
  return image;
}

uint32_t BigEndian32(std::string_view b, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i)
    v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}

}  // namespace

Result<std::string> ReadFileBytes(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    const int err = errno;
    std::string why = std::strerror(err);
    if (err == ENOENT)
      return NotFound(path + ": " + why);
    return IOError(path + ": " + why);
  }
  std::string bytes;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
    bytes.append(buffer, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed)
    return IOError(path + ": read error");
  return bytes;
}

Result<ImageSize> PeekImageSize(const std::string& path,
                                std::string_view bytes) {
  if (IsJpeg(bytes)) {
    PS_ASSIGN_OR_RETURN(JpegHeader h,
                        ReadJpegHeader(Decompressor(), path, bytes));
    return ImageSize{h.height, h.width};
  }
  if (IsPng(bytes)) {
    // The IHDR chunk comes first: length, "IHDR", width, height.
    if (bytes.size() < 24 || bytes.substr(12, 4) != "IHDR")
      return Bad(path, "bad PNG: no IHDR chunk");
    const int64_t width = BigEndian32(bytes, 16);
    const int64_t height = BigEndian32(bytes, 20);
    if (width <= 0 || height <= 0 || width * height > kMaxPixels)
      return Bad(path, "bad PNG: bad size in IHDR");
    return ImageSize{height, width};
  }
  return Bad(path, "not a JPEG or PNG file");
}

Result<Image> DecodeImage(const std::string& path, std::string_view bytes,
                          ImageSize need) {
  if (IsJpeg(bytes))
    return DecodeJpeg(path, bytes, need);
  if (IsPng(bytes))
    return DecodePng(path, bytes);
  return Bad(path, "not a JPEG or PNG file");
}

ImageSize ScaledJpegSize(ImageSize full, ImageSize need) {
  if (need.height <= 0 && need.width <= 0)
    return full;
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  ImageSize best = full;
  for (int i = 0; i < count; ++i) {
    const tjscalingfactor f = factors[i];
    // Only 1/2, 1/4 and 1/8: libjpeg-turbo 2.1 has no SIMD for the other
    // scaled IDCTs, which makes 3/8..7/8 slower than no scaling at all
    // (measured: 500x375 at 7/8 1.6 ms, at 8/8 1.0 ms, at 4/8 0.9 ms).
    if (f.num != 1 || (f.denom != 2 && f.denom != 4 && f.denom != 8))
      continue;
    const ImageSize s{TJSCALED(full.height, f), TJSCALED(full.width, f)};
    if (s.height >= need.height && s.width >= need.width &&
        s.height * s.width < best.height * best.width) {
      best = s;
    }
  }
  return best;
}

}  // namespace pstrain::data
