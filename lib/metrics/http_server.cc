#include "metrics/http_server.h"

#include <atomic>
#include <optional>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace pstrain::metrics {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

using Routes = std::map<std::string, HttpHandler>;

http::response<http::string_body> MakeResponse(unsigned version,
                                               const HttpResponse& r,
                                               bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(r.status),
                                        version};
  res.set(http::field::server, "pstrain");
  res.set(http::field::content_type, r.content_type);
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(keep_alive);
  res.body() = r.body;
  res.prepare_payload();
  return res;
}

HttpResponse Error(int status, const std::string& why) {
  return {status, "text/plain; charset=utf-8", why + "\n"};
}

// The answer to one parsed request.
HttpResponse Answer(const Routes& routes,
                    const http::request<http::string_body>& req) {
  if (req.method() != http::verb::get && req.method() != http::verb::head)
    return Error(405, "only GET is served");
  std::string path(req.target());
  path = path.substr(0, path.find('?'));
  auto it = routes.find(path);
  if (it == routes.end())
    return Error(404, "no such path: " + path);
  return it->second();
}

// One connection: read a request, answer it, again while keep-alive.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Routes* routes,
          const HttpServerOptions* options, std::atomic<size_t>* open)
      : stream_(std::move(socket)),
        routes_(routes),
        options_(options),
        open_(open) {
    open_->fetch_add(1);
  }
  ~Session() { open_->fetch_sub(1); }

  void Read() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(options_->max_request_bytes));
    parser_->body_limit(options_->max_request_bytes);
    stream_.expires_after(options_->idle_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->OnRead(ec);
                     });
  }

  // Beyond max_connections: answered and closed without reading.
  void Refuse() {
    Write(MakeResponse(11, Error(503, "too many connections"), false));
  }

 private:
  void OnRead(beast::error_code ec) {
    if (ec == http::error::header_limit || ec == http::error::body_limit ||
        ec == http::error::buffer_overflow) {
      Write(MakeResponse(11, Error(413, "request too large"), false));
      return;
    }
    if (ec) {  // closed, timed out, or not HTTP: drop it
      stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
      return;
    }
    const auto& req = parser_->get();
    HttpResponse r = Answer(*routes_, req);
    auto res = MakeResponse(req.version(), r, req.keep_alive());
    if (req.method() == http::verb::head)
      res.body().clear();
    Write(std::move(res));
  }

  void Write(http::response<http::string_body> res) {
    response_ = std::move(res);
    stream_.expires_after(options_->idle_timeout);
    http::async_write(
        stream_, response_,
        [self = shared_from_this()](beast::error_code ec, size_t) {
          self->OnWritten(ec);
        });
  }

  void OnWritten(beast::error_code ec) {
    if (!ec && response_.keep_alive()) {
      Read();
      return;
    }
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  const Routes* routes_;
  const HttpServerOptions* options_;
  std::atomic<size_t>* open_;
};

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, Routes routes)
      : options_(std::move(options)),
        routes_(std::move(routes)),
        acceptor_(io_),
        retry_(io_) {}

  ~Impl() {
    io_.stop();
    if (thread_.joinable())
      thread_.join();
  }

  Status Start() {
    const std::string where =
        options_.host + ":" + std::to_string(options_.port);
    beast::error_code ec;
    auto address = net::ip::make_address(options_.host, ec);
    if (ec)
      return InvalidArgument("metrics address " + where + ": not an address");
    tcp::endpoint endpoint(address, static_cast<uint16_t>(options_.port));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec)
      acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec)
      acceptor_.bind(endpoint, ec);
    if (!ec)
      acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return InvalidArgument("--metrics_port " + std::to_string(options_.port) +
                             ": cannot listen at " + where + ": " +
                             ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { io_.run(); });
    return Status::Ok();
  }

  int port() const { return port_; }

 private:
  void Accept() {
    acceptor_.async_accept(
        net::make_strand(io_), [this](beast::error_code ec, tcp::socket s) {
          if (ec == net::error::operation_aborted)
            return;
          if (ec) {  // out of descriptors, say: try again shortly
            retry_.expires_after(std::chrono::milliseconds(50));
            retry_.async_wait([this](beast::error_code e) {
              if (!e)
                Accept();
            });
            return;
          }
          {
            auto session = std::make_shared<Session>(std::move(s), &routes_,
                                                     &options_, &open_);
            if (open_.load() > options_.max_connections)
              session->Refuse();
            else
              session->Read();
          }
          Accept();
        });
  }

  // Sessions left in io_ when it is destroyed still count themselves out
  // of open_ and read routes_ and options_: those go after io_.
  const HttpServerOptions options_;
  const Routes routes_;
  std::atomic<size_t> open_{0};
  net::io_context io_{1};
  tcp::acceptor acceptor_;
  net::steady_timer retry_;
  int port_ = 0;
  std::thread thread_;
};

HttpServer::HttpServer(HttpServerOptions options, Routes routes)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(routes))) {}

HttpServer::~HttpServer() = default;

Status HttpServer::Start() {
  return impl_->Start();
}

int HttpServer::port() const {
  return impl_->port();
}

}  // namespace pstrain::metrics
