#pragma once
// LineFile: a text file read line by line as a stream, plain or gzip
// (zlib reads either), so that a file of tens of gigabytes is never held
// in memory: a 256 KiB buffer and the line being cut are. Not
// thread-safe; one reader.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "util/result.h"

struct gzFile_s;

namespace pstrain::data {

class LineFile {
 public:
  /// Opens `path`. kNotFound when it does not exist; kInvalidArgument when
  /// it is empty (0 bytes); kIOError when it cannot be opened.
  static Result<std::unique_ptr<LineFile>> Open(const std::string& path);
  ~LineFile();
  LineFile(const LineFile&) = delete;
  LineFile& operator=(const LineFile&) = delete;

  /// The next line, without its '\n', valid until the next call; a last
  /// line without one counts. False at the end of the file. kCorruption
  /// naming the file and the lines read when its gzip stream is truncated
  /// or corrupt (the lines before it were returned); kIOError on a read
  /// error.
  Result<bool> Next(std::string_view* line);
  /// Lines returned so far.
  int64_t lines() const { return lines_; }
  const std::string& path() const { return path_; }

 private:
  LineFile(std::string path, gzFile_s* file);
  // Refills the buffer; false at the end of the file.
  Result<bool> Fill();

  std::string path_;
  gzFile_s* file_;
  std::string buffer_;  // read, not yet returned, from begin_
  size_t begin_ = 0;
  std::string line_;  // a line cut across two reads
  bool eof_ = false;
  std::string broken_;  // zlib's word when the gzip stream ended early
  int64_t lines_ = 0;
};

}  // namespace pstrain::data
