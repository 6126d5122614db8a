#pragma once
// Listener: accepts TCP connections and starts a Connection for each, all
// sharing one Handler. Threading: runs on the io_context's thread. `*io` and
// `*handler` must outlive the Listener.

#include <functional>
#include <memory>
#include <string>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

#include "net/connection.h"
#include "util/result.h"
#include "util/status.h"

namespace pstrain::net {

class Listener {
 public:
  using AcceptFn = std::function<void(std::shared_ptr<Connection>)>;

  /// `on_accept` runs for each new connection before it starts reading.
  Listener(asio::io_context* io, Connection::Handler* handler,
           ConnectionOptions options, AcceptFn on_accept);
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  /// Binds host:port (port 0: the kernel picks one) and starts accepting.
  /// kUnavailable "cannot listen on localhost:29500: Address already in use";
  /// kInvalidArgument for a host that does not resolve.
  Status Listen(const std::string& host, int port);
  /// The bound port (useful after Listen with port 0).
  int port() const { return port_; }
  /// Stops accepting; open connections stay.
  void Close();

 private:
  void Accept();

  asio::io_context* io_;
  Connection::Handler* handler_;
  ConnectionOptions options_;
  AcceptFn on_accept_;
  asio::ip::tcp::acceptor acceptor_;
  int port_ = 0;
};

/// A TCP port on `host` that is free right now: a random one below the
/// kernel's ephemeral range (ip_local_port_range), which no bind of port 0
/// or connect hands out. Another process may still take it before the
/// caller binds it; callers that can bind port 0 themselves should.
/// kInvalidArgument / kUnavailable.
Result<int> PickFreePort(const std::string& host);

}  // namespace pstrain::net
