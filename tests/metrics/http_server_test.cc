// HttpServer on real loopback TCP (port 0): what it answers, and that bad
// requests get HTTP errors while it goes on serving.

#include "metrics/http_server.h"

#include <sys/resource.h>

#include <atomic>
#include <string>
#include <vector>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>

namespace pstrain::metrics {
namespace {

using asio::ip::tcp;

tcp::socket Connect(asio::io_context& io, int port) {
  tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)});
  return s;
}

// Sends `request` and reads until the server closes (every request here
// says Connection: close, or is one the server closes on).
std::string Exchange(int port, const std::string& request) {
  asio::io_context io;
  tcp::socket s = Connect(io, port);
  asio::error_code ec;
  asio::write(s, asio::buffer(request), ec);
  std::string reply;
  asio::read(s, asio::dynamic_buffer(reply), ec);
  return reply;
}

std::string Get(int port, const std::string& path) {
  return Exchange(
      port,
      "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
}

std::string StatusLine(const std::string& reply) {
  return reply.substr(0, reply.find("\r\n"));
}

std::string Body(const std::string& reply) {
  auto at = reply.find("\r\n\r\n");
  return at == std::string::npos ? "" : reply.substr(at + 4);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions o = {}) {
    o.host = "127.0.0.1";
    server_ = std::make_unique<HttpServer>(
        o, std::map<std::string, HttpHandler>{
               {"/metrics", [this] {
                  ++scrapes_;
                  return HttpResponse{200, "text/plain; version=0.0.4",
                                      "pstrain_version 7\n"};
                }}});
    ASSERT_TRUE(server_->Start().ok());
  }
  std::unique_ptr<HttpServer> server_;
  std::atomic<int> scrapes_{0};
};

TEST_F(HttpServerTest, ServesAPath) {
  StartServer();
  std::string reply = Get(server_->port(), "/metrics");
  EXPECT_EQ(StatusLine(reply), "HTTP/1.1 200 OK");
  EXPECT_NE(reply.find("Content-Type: text/plain; version=0.0.4"),
            std::string::npos);
  EXPECT_EQ(Body(reply), "pstrain_version 7\n");
  EXPECT_EQ(Body(Get(server_->port(), "/metrics?x=1")), "pstrain_version 7\n");
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequests) {
  StartServer();
  asio::io_context io;
  tcp::socket s = Connect(io, server_->port());
  const std::string get = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  asio::write(s, asio::buffer(get + get + get));
  std::string reply;
  while (scrapes_.load() < 3 || reply.size() < 3 * 40) {
    char buf[4096];
    reply.append(buf, s.read_some(asio::buffer(buf)));
  }
  EXPECT_EQ(scrapes_.load(), 3);
}

TEST_F(HttpServerTest, UnknownPathIs404) {
  StartServer();
  EXPECT_EQ(StatusLine(Get(server_->port(), "/nope")),
            "HTTP/1.1 404 Not Found");
}

TEST_F(HttpServerTest, OtherMethodsAre405) {
  StartServer();
  for (const char* method : {"POST", "PUT", "DELETE"}) {
    std::string reply =
        Exchange(server_->port(), std::string(method) +
                                      " /metrics HTTP/1.1\r\nHost: x\r\n"
                                      "Content-Length: 2\r\nConnection: "
                                      "close\r\n\r\nhi");
    EXPECT_EQ(StatusLine(reply), "HTTP/1.1 405 Method Not Allowed") << method;
  }
  EXPECT_EQ(scrapes_.load(), 0);
}

TEST_F(HttpServerTest, MegabyteRequestIs413) {
  StartServer();
  const std::string body(1 << 20, 'x');
  std::string reply = Exchange(
      server_->port(), "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(StatusLine(reply), "HTTP/1.1 413 Payload Too Large");
  // A megabyte of header, too.
  reply = Exchange(server_->port(),
                   "GET /metrics HTTP/1.1\r\nX-Big: " + body + "\r\n\r\n");
  EXPECT_EQ(StatusLine(reply), "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(StatusLine(Get(server_->port(), "/metrics")), "HTTP/1.1 200 OK");
}

TEST_F(HttpServerTest, GarbageIsDroppedAndServingGoesOn) {
  StartServer();
  std::string reply = Exchange(server_->port(), "\x01\x02 not http\r\n\r\n");
  EXPECT_EQ(reply.find("200"), std::string::npos);
  EXPECT_EQ(StatusLine(Get(server_->port(), "/metrics")), "HTTP/1.1 200 OK");
}

TEST_F(HttpServerTest, ThousandOpenConnectionsLeaveItServing) {
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < 1200 && files.rlim_max >= 1200) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_max, 4096);
    setrlimit(RLIMIT_NOFILE, &files);
  }
  ASSERT_GE(files.rlim_cur, 1200u) << "needs 1200 file descriptors";
  HttpServerOptions o;
  o.max_connections = 64;
  StartServer(o);
  asio::io_context io;
  std::vector<tcp::socket> idle;
  for (int i = 0; i < 1000; ++i)
    idle.push_back(Connect(io, server_->port()));
  // Those beyond the limit were answered 503 and closed; a new request
  // after the idle ones time out or are refused is served.
  std::string reply;
  for (int tries = 0; tries < 200; ++tries) {
    reply = Get(server_->port(), "/metrics");
    if (StatusLine(reply) == "HTTP/1.1 200 OK")
      break;
    EXPECT_EQ(StatusLine(reply), "HTTP/1.1 503 Service Unavailable");
    idle.erase(idle.begin(), idle.begin() + std::min<size_t>(idle.size(), 10));
  }
  EXPECT_EQ(StatusLine(reply), "HTTP/1.1 200 OK");
  EXPECT_EQ(Body(reply), "pstrain_version 7\n");
}

TEST_F(HttpServerTest, PortInUseIsInvalidArgumentNamingIt) {
  StartServer();
  HttpServerOptions o;
  o.host = "127.0.0.1";
  o.port = server_->port();
  HttpServer second(o, {});
  Status s = second.Start();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--metrics_port " + std::to_string(o.port)),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace pstrain::metrics
