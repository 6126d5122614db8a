#pragma once
// HttpGet: one HTTP/1.1 GET over real TCP, for tests of what pstrain and
// Prometheus serve.

#include <string>

namespace pstrain::testing {

struct HttpReply {
  int status = 0;  // 0: no connection or no HTTP reply
  std::string body;
};

/// GETs `path` (with its query) from host:port, reading until the server
/// closes (the request says Connection: close).
HttpReply HttpGet(const std::string& host, int port, const std::string& path);

/// `text` with every byte but unreserved ones %-escaped, for a query.
std::string UrlEncode(const std::string& text);

}  // namespace pstrain::testing
