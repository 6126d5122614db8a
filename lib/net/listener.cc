#include "net/listener.h"

#include <fstream>
#include <random>

namespace pstrain::net {

Listener::Listener(asio::io_context* io, Connection::Handler* handler,
                   ConnectionOptions options, AcceptFn on_accept)
    : io_(io),
      handler_(handler),
      options_(options),
      on_accept_(std::move(on_accept)),
      acceptor_(*io) {}

namespace {

Status OpenAcceptor(asio::ip::tcp::acceptor& acceptor,
                    const asio::ip::tcp::endpoint& ep) {
  std::error_code ec;
  acceptor.open(ep.protocol(), ec);
  if (!ec)
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec)
    acceptor.bind(ep, ec);
  if (!ec)
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::error_code ignored;
    acceptor.close(ignored);
    return Unavailable(ec.message());
  }
  return Status::Ok();
}

// The low end of the kernel's ephemeral ports, or Linux's default where
// it cannot be read.
int EphemeralLow() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  return (in >> low) && low > 2048 ? low : 32768;
}

}  // namespace

Status Listener::Listen(const std::string& host, int port) {
  asio::ip::tcp::resolver resolver(*io_);
  std::error_code ec;
  auto results = resolver.resolve(host, std::to_string(port),
                                  asio::ip::tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    return InvalidArgument("cannot resolve " + host + ": " + ec.message());
  }
  Status s = OpenAcceptor(acceptor_, results.begin()->endpoint());
  if (!s.ok()) {
    return s.WithContext("cannot listen on " + host + ":" +
                         std::to_string(port));
  }
  port_ = acceptor_.local_endpoint(ec).port();
  Accept();
  return Status::Ok();
}

void Listener::Accept() {
  acceptor_.async_accept([this](const std::error_code& ec,
                                asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted)
      return;  // Close()
    if (!ec) {
      auto conn =
          std::make_shared<Connection>(std::move(socket), handler_, options_);
      on_accept_(conn);
      conn->Start();
    }
    if (acceptor_.is_open())
      Accept();
  });
}

void Listener::Close() {
  std::error_code ignored;
  acceptor_.close(ignored);
}

// Not the kernel's pick for port 0: it hands the same free ports to any
// process that binds port 0 or connects meanwhile, another launch among
// them, before the caller binds it. A random port below the ephemeral
// range is one that no such pick hands out; the kernel's pick only where
// 64 of those are taken.
Result<int> PickFreePort(const std::string& host) {
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  std::error_code ec;
  auto results =
      resolver.resolve(host, "0", asio::ip::tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    return InvalidArgument("cannot resolve " + host + ": " + ec.message());
  }
  asio::ip::tcp::endpoint ep = results.begin()->endpoint();
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> below(1024, EphemeralLow() - 1);
  for (int i = 0; i < 64; ++i) {
    ep.port(static_cast<uint16_t>(below(rng)));
    asio::ip::tcp::acceptor acceptor(io);
    if (OpenAcceptor(acceptor, ep).ok())
      return static_cast<int>(ep.port());
  }
  ep.port(0);
  asio::ip::tcp::acceptor acceptor(io);
  PS_RETURN_IF_ERROR(OpenAcceptor(acceptor, ep));
  return static_cast<int>(acceptor.local_endpoint().port());
}

}  // namespace pstrain::net
