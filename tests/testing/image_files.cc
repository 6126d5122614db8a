#include "testing/image_files.h"

#include <png.h>
#include <turbojpeg.h>

#include <filesystem>
#include <fstream>

#include "util/check.h"

namespace pstrain::data::testing {
namespace {

void AppendPng(png_structp png, png_bytep data, png_size_t n) {
  auto* out = static_cast<std::string*>(png_get_io_ptr(png));
  out->append(reinterpret_cast<const char*>(data), n);
}

void FlushPng(png_structp) {}

}  // namespace

std::vector<uint8_t> TestPattern(int64_t height, int64_t width, int channels,
                                 int tint) {
  std::vector<uint8_t> p(static_cast<size_t>(height * width * channels));
  uint32_t noise = 12345u + static_cast<uint32_t>(tint);
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        noise = noise * 1664525u + 1013904223u;
        const int base = (tint * 67 + c * 97) % 256;
        const int v = base / 2 + static_cast<int>(96 * y / height) +
                      static_cast<int>((c + 1) * 40 * x / width) +
                      static_cast<int>(noise >> 28);
        p[(y * width + x) * channels + c] = static_cast<uint8_t>(v % 256);
      }
    }
  }
  return p;
}

std::string EncodeJpeg(const std::vector<uint8_t>& pixels, int64_t height,
                       int64_t width, int quality) {
  tjhandle tj = tjInitCompress();
  PS_CHECK(tj != nullptr) << "tjInitCompress";
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(tj, pixels.data(), static_cast<int>(width), 0,
                             static_cast<int>(height), TJPF_RGB, &jpeg, &size,
                             TJSAMP_420, quality, 0);
  PS_CHECK(rc == 0) << "tjCompress2: " << tjGetErrorStr2(tj);
  std::string bytes(reinterpret_cast<const char*>(jpeg), size);
  tjFree(jpeg);
  tjDestroy(tj);
  return bytes;
}

std::string EncodePng(const std::vector<uint8_t>& pixels, int64_t height,
                      int64_t width, int channels) {
  static const int kTypes[] = {0, PNG_COLOR_TYPE_GRAY, 0, PNG_COLOR_TYPE_RGB,
                               PNG_COLOR_TYPE_RGB_ALPHA};
  PS_CHECK(channels == 1 || channels == 3 || channels == 4) << channels;
  std::string out;
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  PS_CHECK(png != nullptr && info != nullptr) << "png_create_write_struct";
  // libpng's default error handler aborts through its own longjmp buffer;
  // writing to memory with valid arguments does not fail.
  png_set_write_fn(png, &out, AppendPng, FlushPng);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width),
               static_cast<png_uint_32>(height), 8, kTypes[channels],
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int64_t y = 0; y < height; ++y) {
    png_write_row(png,
                  const_cast<png_bytep>(pixels.data()) + y * width * channels);
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  PS_CHECK(out.good()) << "cannot write " << path;
}

void WriteImageFolder(const std::string& dir,
                      const std::vector<std::string>& classes, int per_class,
                      int64_t size, bool with_corrupt) {
  const int64_t width = size * 4 / 3;
  for (const char* split : {"train", "val"}) {
    for (size_t c = 0; c < classes.size(); ++c) {
      const std::string folder = dir + "/" + split + "/" + classes[c];
      std::filesystem::create_directories(folder);
      for (int i = 0; i < per_class; ++i) {
        const auto pixels =
            TestPattern(size, width, 3, static_cast<int>(c) + i);
        const std::string name = folder + "/img" + std::to_string(i);
        if (i % 2 == 0)
          WriteFile(name + ".jpg", EncodeJpeg(pixels, size, width));
        else
          WriteFile(name + ".png", EncodePng(pixels, size, width));
      }
    }
  }
  if (with_corrupt) {
    const std::string folder = dir + "/train/" + classes.at(0);
    WriteFile(folder + "/bad_text.jpg", "this is not a JPEG file\n");
    const std::string jpeg =
        EncodeJpeg(TestPattern(size, width, 3, 7), size, width);
    WriteFile(folder + "/bad_truncated.jpg", jpeg.substr(0, jpeg.size() / 2));
  }
}

}  // namespace pstrain::data::testing
