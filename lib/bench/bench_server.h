#pragma once
// BenchServer: a real ps::Service in async mode (or sync) holding one
// float32 key of a given size, run on its own thread for benchmarks whose
// workers are threads of the same process (`pstrain bench wire`, `pstrain
// bench load`). Every push is applied at once (SGD, lr 1e-9, no momentum),
// as a parameter server does; in sync, once every worker's push of the step
// is summed. Start, then Join once every worker has sent done. Not
// thread-safe apart from what the Service itself serves.

#include <cstdint>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include <ATen/core/Tensor.h>
#include <asio/io_context.hpp>

#include "ps/job/job_spec.h"
#include "ps/service/service.h"
#include "ps/store/parameter_server.h"
#include "report/event_log.h"
#include "report/server_stats.h"
#include "wire/messages.h"

namespace pstrain::bench {

class BenchServer {
 public:
  /// A key of max(1, bytes / 4) float32 elements for `workers` workers,
  /// whose connections may move to `transport` (--transport's values), in
  /// `mode` (async or sync).
  BenchServer(uint64_t bytes, int workers, const std::string& transport = "tcp",
              ps::Mode mode = ps::Mode::kAsync);
  ~BenchServer();
  BenchServer(const BenchServer&) = delete;
  BenchServer& operator=(const BenchServer&) = delete;

  /// Listens on 127.0.0.1, a port of the kernel's choice, and serves on a
  /// thread. kUnavailable if it cannot listen.
  Status Start();
  /// Waits for the Service to end (every worker done); its Status.
  Status Join();

  int port() const { return service_->port(); }
  std::vector<wire::KeySpec> Keys() const;
  const at::Tensor& param() const { return param_; }
  /// After Join: pushes the ParameterServer applied, and its version.
  uint64_t pushes() const { return server_->pushes(); }
  uint64_t version() const { return server_->version(); }
  /// After Join: the Service's Stats() (bytes_pushed, refused_pushes, ...).
  report::ServerStats Stats() const { return service_->Stats(); }

 private:
  at::Tensor param_;
  ps::JobSpec spec_;
  std::ostringstream log_sink_;
  std::unique_ptr<report::EventLog> log_;
  std::unique_ptr<ps::ParameterServer> server_;
  asio::io_context io_;
  std::unique_ptr<ps::Service> service_;
  std::thread thread_;
  Status status_;
};

}  // namespace pstrain::bench
