#include "bench/bench_server.h"

#include <algorithm>

#include <torch/torch.h>

#include "ps/job/tensor_codec.h"
#include "ps/store/parameter_server.h"

namespace pstrain::bench {

BenchServer::BenchServer(uint64_t bytes, int workers,
                         const std::string& transport, ps::Mode mode)
    : param_(torch::zeros({std::max<int64_t>(1, bytes / 4)}).requires_grad_()) {
  report::EventLogOptions lo;
  lo.quiet = true;
  lo.err = &log_sink_;
  lo.out = &log_sink_;
  log_ = std::make_unique<report::EventLog>(lo);
  spec_.model = "bench";
  spec_.mode = mode;
  spec_.momentum = 0;
  spec_.lr = 1e-9;
  spec_.world_size = workers + 1;
  spec_.transport = transport;
  server_ = std::make_unique<ps::ParameterServer>(
      spec_, std::vector<at::Tensor>{param_});
  ps::ServiceOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  service_ = std::make_unique<ps::Service>(&io_, spec_, Keys(), server_.get(),
                                           log_.get(), o);
}

BenchServer::~BenchServer() {
  if (thread_.joinable()) {
    io_.stop();
    thread_.join();
  }
}

Status BenchServer::Start() {
  PS_RETURN_IF_ERROR(service_->Listen());
  thread_ = std::thread([this] { status_ = service_->Run(); });
  return Status::Ok();
}

Status BenchServer::Join() {
  thread_.join();
  return status_;
}

std::vector<wire::KeySpec> BenchServer::Keys() const {
  return {ps::KeySpecOf("w", param_)};
}

}  // namespace pstrain::bench
