#pragma once
// HttpServer: a small HTTP/1.1 server on a thread of its own, for
// /metrics and the dashboard (Boost.Beast does the HTTP). It answers GET
// on the paths it was given and refuses everything else with an HTTP
// error: 404 for an unknown path, 405 for another method, 413 for a
// request over max_request_bytes, 503 once max_connections are open (the
// extra connection is answered and closed). An idle connection is closed
// after idle_timeout. Nothing a client sends reaches training: handlers
// run on the server's thread and only read what training published.
//
// Threading: Start, port and the destructor from one thread; handlers run
// on the server's own thread, one at a time.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "util/status.h"

namespace pstrain::metrics {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

/// Answers a GET of one path. Runs on the server's thread.
using HttpHandler = std::function<HttpResponse()>;

struct HttpServerOptions {
  /// Address to bind. Default: all interfaces ("0.0.0.0"), as Prometheus
  /// scrapes from another machine.
  std::string host = "0.0.0.0";
  /// 0: the kernel picks a free port (see port()).
  int port = 0;
  /// Connections open at once; one more is answered 503 and closed.
  size_t max_connections = 64;
  /// Largest request, header and body, in bytes; larger: 413.
  size_t max_request_bytes = 16 * 1024;
  /// A connection that sends nothing for this long is closed.
  std::chrono::milliseconds idle_timeout{10000};
};

class HttpServer {
 public:
  /// `routes`: path (e.g. "/metrics") to its handler.
  HttpServer(HttpServerOptions options,
             std::map<std::string, HttpHandler> routes);
  /// Stops serving and joins the thread; open connections are closed.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds and starts the thread. kInvalidArgument naming host:port when
  /// the port is taken or the address is not this machine's.
  Status Start();
  /// The bound port. REQUIRES: Start returned ok.
  int port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pstrain::metrics
