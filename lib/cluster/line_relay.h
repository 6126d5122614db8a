#pragma once
// LineRelay: copies a byte stream (a child's stdout or stderr) to an ostream
// line by line, each line prefixed and flushed whole, so that lines from
// several relays sharing one ostream never interleave mid-line. Not
// thread-safe: one thread feeds all relays of an ostream.

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>

namespace pstrain::cluster {

class LineRelay {
 public:
  /// `*sink` must outlive this relay. Lines longer than `max_line_bytes`
  /// (without the prefix) are cut into lines of that length.
  LineRelay(std::ostream* sink, std::string prefix,
            size_t max_line_bytes = 64 * 1024);
  /// Hands each line, without prefix or '\n', to `sink` instead.
  explicit LineRelay(std::function<void(const std::string&)> sink,
                     size_t max_line_bytes = 64 * 1024);

  /// Appends `size` bytes and writes every line they complete, as
  /// prefix + line + '\n'.
  void Feed(const char* data, size_t size);

  /// Writes the unfinished last line, if any, ended by '\n'. Call at EOF.
  void Finish();

 private:
  void WriteLine(size_t begin, size_t size);

  std::function<void(const std::string&)> sink_;
  size_t max_line_bytes_;
  std::string pending_;
};

}  // namespace pstrain::cluster
