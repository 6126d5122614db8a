#include "data/idx_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace pstrain::data {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;
constexpr size_t kReadChunkBytes = size_t{1} << 20;

uint32_t DecodeBigEndian32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) |
         (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

std::string DimsString(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) {
    if (!s.empty())
      s += "x";
    s += std::to_string(d);
  }
  return s;
}

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

Result<GzFile> OpenGz(const std::string& path) {
  errno = 0;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f != nullptr)
    return GzFile(f);
  if (errno == ENOENT)
    return NotFound(path + ": no such file");
  return IOError(path + ": cannot open: " + std::strerror(errno));
}

/// Reads the whole (decompressed) contents of `path`.
Result<std::string> ReadAll(const std::string& path) {
  PS_ASSIGN_OR_RETURN(GzFile file, OpenGz(path));
  gzbuffer(file.get(), 256 * 1024);
  std::string bytes;
  while (true) {
    size_t old_size = bytes.size();
    if (old_size > kMaxIdxFileBytes) {
      return Corruption(path + ": larger than " +
                        std::to_string(kMaxIdxFileBytes) + " bytes");
    }
    bytes.resize(old_size + kReadChunkBytes);
    int n = gzread(file.get(), bytes.data() + old_size,
                   static_cast<unsigned>(kReadChunkBytes));
    if (n < 0) {
      int zerr = 0;
      const char* msg = gzerror(file.get(), &zerr);
      if (zerr == Z_ERRNO)
        msg = std::strerror(errno);
      std::string message = path + ": cannot read: " + msg;
      return zerr == Z_DATA_ERROR ? Corruption(message) : IOError(message);
    }
    bytes.resize(old_size + static_cast<size_t>(n));
    if (n == 0)
      return bytes;
  }
}

/// Reads `rank` big-endian dims after the magic; stores their product.
Status ParseDims(const std::string& path, std::string_view bytes, int rank,
                 std::vector<int64_t>* dims, uint64_t* product) {
  size_t header_bytes = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < header_bytes) {
    return Corruption(path +
                      ": header is truncated: " + std::to_string(bytes.size()) +
                      " bytes, need " + std::to_string(header_bytes) + " for " +
                      std::to_string(rank) + " dims");
  }
  *product = 1;
  for (int i = 0; i < rank; ++i) {
    uint32_t dim = DecodeBigEndian32(bytes.data() + 4 + 4 * i);
    dims->push_back(dim);
    // Saturates: an absurd product is reported as a data size mismatch.
    if (dim != 0 && *product > UINT64_MAX / dim) {
      *product = UINT64_MAX;
    } else {
      *product *= dim;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<torch::Tensor> ParseIdx(const std::string& path, std::string_view bytes,
                               IdxKind kind) {
  const bool images = kind == IdxKind::kImages;
  const uint32_t want_magic = images ? kImagesMagic : kLabelsMagic;
  if (bytes.size() < 4) {
    return Corruption(path + ": magic number is truncated: file is " +
                      std::to_string(bytes.size()) + " bytes");
  }
  uint32_t magic = DecodeBigEndian32(bytes.data());
  if (magic != want_magic) {
    return Corruption(path + ": magic number is " + Hex32(magic) +
                      ", expected " + Hex32(want_magic) +
                      (images ? " (IDX images)" : " (IDX labels)"));
  }
  const int rank = images ? 3 : 1;
  std::vector<int64_t> dims;
  uint64_t product = 0;
  PS_RETURN_IF_ERROR(ParseDims(path, bytes, rank, &dims, &product));
  std::string_view data = bytes.substr(4 + 4 * rank);
  if (data.size() != product) {
    return Corruption(path + ": data size is " + std::to_string(data.size()) +
                      " bytes, but dims " + DimsString(dims) + " need " +
                      std::to_string(product));
  }
  torch::Tensor out = torch::empty(dims, torch::kUInt8);
  if (!data.empty())
    std::memcpy(out.data_ptr(), data.data(), data.size());
  return out;
}

Result<torch::Tensor> ReadIdxFile(const std::string& path, IdxKind kind) {
  PS_ASSIGN_OR_RETURN(std::string bytes, ReadAll(path));
  return ParseIdx(path, bytes, kind);
}

}  // namespace pstrain::data
