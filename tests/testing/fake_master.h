#pragma once
// FakeMaster: a rank 0 that speaks just enough of the wire protocol to hand
// a worker a job spec of the test's choosing, to test what a worker makes of
// a bad one. It listens on 127.0.0.1, port 0, and answers one connection:
// its hello with a server's hello, its get_job with `job_json` as sent, its
// get_module with a module named `module_sha256` carrying `module_bytes`
// (both as given, right or wrong); any other frame ends the conversation. Runs
// on a thread of its own, which the destructor stops. Not thread-safe.

#include <cstdint>
#include <string>
#include <thread>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

#include "wire/frame.h"

namespace pstrain::testing {

class FakeMaster {
 public:
  explicit FakeMaster(std::string job_json, std::string module_sha256 = "",
                      std::string module_bytes = "");
  ~FakeMaster();
  FakeMaster(const FakeMaster&) = delete;
  FakeMaster& operator=(const FakeMaster&) = delete;

  /// The port it listens on.
  int port() const { return port_; }

 private:
  void ReadHeader();
  void ReadBody();
  void Answer();

  const std::string job_json_;
  const std::string module_sha256_, module_bytes_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  asio::ip::tcp::socket socket_;
  int port_ = 0;
  char header_bytes_[wire::kFrameHeaderBytes] = {};
  wire::FrameHeader header_;
  std::string body_, reply_;
  std::thread thread_;
};

}  // namespace pstrain::testing
