#include "testing/http_get.h"

#include <cstdio>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

namespace pstrain::testing {

HttpReply HttpGet(const std::string& host, int port, const std::string& path) {
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  asio::error_code ec;
  s.connect({asio::ip::make_address(host, ec), static_cast<uint16_t>(port)},
            ec);
  if (ec)
    return {};
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + host +
                              "\r\nConnection: close\r\n\r\n";
  asio::write(s, asio::buffer(request), ec);
  std::string reply;
  asio::read(s, asio::dynamic_buffer(reply), ec);
  HttpReply out;
  if (reply.rfind("HTTP/1.", 0) != 0 || reply.size() < 12)
    return out;
  out.status = std::stoi(reply.substr(9, 3));
  const size_t body = reply.find("\r\n\r\n");
  if (body != std::string::npos)
    out.body = reply.substr(body + 4);
  return out;
}

std::string UrlEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace pstrain::testing
