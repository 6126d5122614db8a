#include "cluster/line_relay.h"

#include <utility>

#include "util/check.h"

namespace pstrain::cluster {

LineRelay::LineRelay(std::ostream* sink, std::string prefix,
                     size_t max_line_bytes)
    : max_line_bytes_(max_line_bytes) {
  PS_CHECK(sink != nullptr && max_line_bytes_ > 0);
  sink_ = [sink, prefix = std::move(prefix)](const std::string& line) {
    *sink << prefix << line << '\n';
    sink->flush();
  };
}

LineRelay::LineRelay(std::function<void(const std::string&)> sink,
                     size_t max_line_bytes)
    : sink_(std::move(sink)), max_line_bytes_(max_line_bytes) {
  PS_CHECK(sink_ && max_line_bytes_ > 0);
}

void LineRelay::Feed(const char* data, size_t size) {
  pending_.append(data, size);
  size_t begin = 0;
  while (true) {
    size_t newline = pending_.find('\n', begin);
    size_t cut = begin + max_line_bytes_;
    if (newline != std::string::npos && newline <= cut) {
      WriteLine(begin, newline - begin);
      begin = newline + 1;
    } else if (pending_.size() >= cut) {
      WriteLine(begin, max_line_bytes_);
      begin = cut;
    } else {
      break;
    }
  }
  pending_.erase(0, begin);
}

void LineRelay::Finish() {
  if (!pending_.empty())
    WriteLine(0, pending_.size());
  pending_.clear();
}

void LineRelay::WriteLine(size_t begin, size_t size) {
  sink_(pending_.substr(begin, size));
}

}  // namespace pstrain::cluster
