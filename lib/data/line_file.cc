#include "data/line_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace pstrain::data {

namespace {
constexpr unsigned kReadBytes = 256 * 1024;
}  // namespace

Result<std::unique_ptr<LineFile>> LineFile::Open(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec == std::errc::no_such_file_or_directory)
    return NotFound(path + ": no such file");
  if (!ec && size == 0)
    return InvalidArgument(path + ": empty file, expected lines of data");
  errno = 0;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr)
    return IOError(path + ": cannot open: " + std::strerror(errno));
  gzbuffer(f, kReadBytes);
  return std::unique_ptr<LineFile>(new LineFile(path, f));
}

LineFile::LineFile(std::string path, gzFile_s* file)
    : path_(std::move(path)), file_(file) {}

LineFile::~LineFile() {
  gzclose(file_);
}

Result<bool> LineFile::Fill() {
  buffer_.resize(kReadBytes);
  begin_ = 0;
  const int n = gzread(file_, buffer_.data(), kReadBytes);
  // A gzip stream that ends early gives what it holds, with Z_BUF_ERROR
  // set (a corrupt one fails, n < 0): its lines are returned, and the cut
  // one is not.
  int zerr = Z_OK;
  const char* msg = gzerror(file_, &zerr);
  if (zerr == Z_ERRNO)
    return IOError(path_ + ": cannot read: " + std::strerror(errno));
  if (zerr != Z_OK && broken_.empty())
    broken_ = msg;
  buffer_.resize(static_cast<size_t>(n > 0 ? n : 0));
  return n > 0;
}

Result<bool> LineFile::Next(std::string_view* line) {
  line_.clear();  // a line cut across two reads: its start
  for (;;) {
    if (begin_ < buffer_.size()) {
      const char* start = buffer_.data() + begin_;
      const void* nl = std::memchr(start, '\n', buffer_.size() - begin_);
      if (nl != nullptr) {
        const size_t len = static_cast<const char*>(nl) - start;
        begin_ += len + 1;
        ++lines_;
        if (line_.empty()) {
          *line = std::string_view(start, len);
          return true;
        }
        line_.append(start, len);
        *line = line_;
        return true;
      }
      line_.append(start, buffer_.size() - begin_);
      begin_ = buffer_.size();
    }
    if (eof_)
      break;
    PS_ASSIGN_OR_RETURN(const bool more, Fill());
    eof_ = !more;
  }
  if (!broken_.empty()) {
    return Corruption(path_ + ": gzip stream truncated or corrupt after " +
                      std::to_string(lines_) + " lines: " + broken_);
  }
  if (line_.empty())
    return false;
  ++lines_;
  *line = line_;
  return true;
}

}  // namespace pstrain::data
